"""PuffeRL (PufferLib 3.0's PPO trainer) on CUDA trains a snake on maps like the snake season tournament's.

The training half of bench/gpu_check.sh (issues 31 and 35). It imports PufferLib, torch, numpy, safetensors and
genome_lab.core only (no genome_lab install on the GPU machine: the repository's root on PYTHONPATH and fastcore are
enough). PufferLib's own pieces do the work: its Ocean Snake env in C, its Multiprocessing vectorisation, its
`Recurrent(Snake)` model (the layout of PufferSnake's weights) and PuffeRL.

Maps: the season tournament's snake settings (`SeasonConfig`: 48x36 cells, 60 food, 3 genomes x 6 snakes = 18 snakes,
`SnakeArena.game_settings`' max_snake_length 512) and its game length: every map is rebuilt fresh (new snakes, new
food, a new seed) every --reset-every steps (150, a season game), so the learner trains on the early-game states a
tournament game shows instead of a map that runs for ever. Self-play: the learner drives every snake, starting from
--init (PufferSnake's weights as PuffeRL's model holds them; bench/gpu_weights.py writes them) or from PufferLib's
initialisation; PufferLib's rewards (+0.1 per food or corpse cell, -1 at death).

Writes to --out: NAME.safetensors (the model's parameters under PufferLib's names, with the run's settings and its
agent-steps in the metadata), rewritten every --save-every seconds so that a killed run still leaves weights, and
NAME.json (settings, agent-steps, wall seconds, agent-steps/s overall and per epoch, PuffeRL's log rows).
Usage: python bench/gpu_snake.py --out DIR --name NAME [--init PufferSnake.safetensors] [--seconds 300] [flags below]
"""
import json, os, sys, time
from dataclasses import dataclass, asdict
from typing import Annotated
from pathlib import Path
import numpy as np
import torch
from safetensors.torch import save as st_save, load_file
import pufferlib, pufferlib.vector, pufferlib.pufferl as pufferl
from pufferlib.ocean.snake.snake import Snake
from pufferlib.ocean.snake import binding
import pufferlib.ocean.torch as ocean_torch
from genome_lab.core import atomic_write, atomic_write_json, config_parser, config_from_args

@dataclass
class GPUSnakeConfig:
    "A PuffeRL run of a snake on tournament-like maps (the flags of bench/gpu_snake.py)."
    out: Annotated[str, 'folder of the weights and the log'] = 'runs/gpu-snake'
    name: Annotated[str, 'file name stem of this run'] = 'snake'
    init: Annotated[str, 'start weights (safetensors, PufferLib names); empty: PufferLib initialisation'] = ''
    device: Annotated[str, 'torch device'] = 'cuda'
    seconds: Annotated[float, 'wall-clock budget of training (stops after the epoch that passes it)'] = 300.0
    total_timesteps: Annotated[int, "agent-steps of the learning rate's cosine schedule (and a cap)"] = 500_000_000
    workers: Annotated[int, 'env processes (Multiprocessing backend)'] = 8
    maps_per_worker: Annotated[int, 'maps in each env process'] = 128
    width: Annotated[int, 'map width in cells (SeasonConfig.snake_width)'] = 48
    height: Annotated[int, 'map height in cells (SeasonConfig.snake_height)'] = 36
    snakes: Annotated[int, 'snakes per map (3 genomes x SeasonConfig.snake_agents)'] = 18
    food: Annotated[int, 'food per map (SeasonConfig.snake_food)'] = 60
    max_snake_length: Annotated[int, "SnakeArena.game_settings' max_snake_length"] = 512
    reset_every: Annotated[int, 'steps between fresh maps (SeasonConfig.snake_steps)'] = 150
    learning_rate: Annotated[float, "Adam's step size (cosine-annealed to 0 over total_timesteps)"] = 1e-4
    clip_coef: Annotated[float, "PPO's clip"] = 0.2
    ent_coef: Annotated[float, 'entropy bonus'] = 0.010507292602201058
    minibatch_size: Annotated[int, 'agent-steps per gradient step'] = 32768
    bptt_horizon: Annotated[int, 'steps per training segment'] = 64
    seed: Annotated[int, 'seeds torch and the maps'] = 0
    save_every: Annotated[float, 'seconds between weight files'] = 30.0

class TournamentMaps(Snake):
    """PufferLib's Snake whose maps are all rebuilt fresh every `reset_every` steps (PufferLib's `c_reset` keeps the
    last game's food and corpses, so the C envs are made anew), each time with the next seed of this env's stream."""
    def __init__(self, reset_every:int=150, buf=None, seed:int=0, **kw):
        self.reset_every, self._kw, self._seed, self.resets = reset_every, kw, seed, 0
        super().__init__(buf=buf, seed=seed, report_interval=reset_every, **kw)
        self._buf = buf or dict(observations=self.observations, rewards=self.rewards, terminals=self.terminals,
                                truncations=self.truncations, masks=self.masks, actions=self.actions)

    def step(self, actions):
        out = super().step(actions)   # its log (the C envs' means since the last report) comes at tick reset_every
        if self.tick % self.reset_every == 0: self._fresh()
        return out

    def _fresh(self):
        binding.vec_close(self.c_envs)
        self.resets += 1
        del self.observation_space, self.action_space   # PufferEnv.__init__ makes them and refuses an env that has them
        Snake.__init__(self, buf=self._buf, seed=self._seed, report_interval=self.reset_every, **self._kw)
        binding.vec_reset(self.c_envs, self._seed*100_000 + self.resets)

def make_env(reset_every=150, buf=None, seed=0, **kw): return TournamentMaps(reset_every, buf=buf, seed=seed, **kw)

def train_settings(c:GPUSnakeConfig)->dict: # PuffeRL's config
    "PufferLib's default.ini and snake.ini [train] (as PufferLib's `load_config` reads them) with this run's settings."
    argv, sys.argv = sys.argv, sys.argv[:1]
    try: t = dict(pufferl.load_config('puffer_snake')['train'])
    finally: sys.argv = argv
    return {**t, 'device': c.device, 'optimizer': 'adam', 'learning_rate': c.learning_rate, 'clip_coef': c.clip_coef,
            'ent_coef': c.ent_coef, 'minibatch_size': c.minibatch_size, 'bptt_horizon': c.bptt_horizon,
            'total_timesteps': c.total_timesteps, 'seed': c.seed, 'env': 'puffer_snake tournament maps',
            'use_rnn': True,
            'checkpoint_interval': 2**62, 'data_dir': str(Path(c.out)/'puffer')}

def params(model)->dict: # {PufferLib name: tensor on the CPU}, shared tensors once (the LSTM cell shares the LSTM's)
    return {k: v.detach().float().cpu().contiguous() for k, v in model.named_parameters()}

def save(model, c:GPUSnakeConfig, **meta):
    meta = {'gpu_snake': json.dumps(dict(config=asdict(c), **meta))}
    atomic_write(Path(c.out)/f'{c.name}.safetensors', st_save(params(model), metadata=meta))

def main():
    ap = config_parser(GPUSnakeConfig, description=__doc__.splitlines()[0])
    c = config_from_args(GPUSnakeConfig, ap.parse_args())
    Path(c.out).mkdir(parents=True, exist_ok=True)
    torch.manual_seed(c.seed)
    env_kw = dict(reset_every=c.reset_every, num_envs=c.maps_per_worker, width=c.width, height=c.height,
                  num_snakes=c.snakes, num_food=c.food, max_snake_length=c.max_snake_length)
    # the env processes fork before CUDA starts
    vecenv = pufferlib.vector.make(make_env, env_kwargs=env_kw, backend=pufferlib.vector.Multiprocessing,
                                   num_envs=c.workers, num_workers=c.workers, batch_size=c.workers, seed=c.seed)
    model = ocean_torch.Recurrent(vecenv.driver_env, ocean_torch.Snake(vecenv.driver_env, hidden_size=128), 128, 128)
    if c.init:
        got = load_file(c.init); own = dict(model.named_parameters())
        if set(got) != set(own):
            raise ValueError(f"{c.init} holds {sorted(got)}, not PufferLib's snake model's {sorted(own)}")
        with torch.no_grad():
            for k, v in got.items(): own[k].copy_(v)
    model = model.to(c.device)
    trainer = pufferl.PuffeRL(train_settings(c), vecenv, model)
    trainer.print_dashboard = lambda *a, **k: None   # PufferLib's rich dashboard: our log lines instead
    rows, epochs, t0, last_save = [], [], time.perf_counter(), time.perf_counter()
    device = torch.cuda.get_device_name() if c.device == 'cuda' else 'cpu'
    print(f"{c.name}: {vecenv.num_agents:,} snakes on {c.workers * c.maps_per_worker} maps of {c.width}x{c.height}, "
          f"batch {trainer.config['batch_size']:,}, device {device}", flush=True)
    while trainer.global_step < c.total_timesteps and time.perf_counter() - t0 < c.seconds:
        e0, s0 = time.perf_counter(), trainer.global_step
        trainer.evaluate()
        logs = trainer.train()
        epochs.append(dict(agent_steps=int(trainer.global_step), seconds=time.perf_counter() - t0,
                           sps=(trainer.global_step - s0) / (time.perf_counter() - e0)))
        if logs is not None:
            row = {k.split('/', 1)[-1]: float(v) for k, v in logs.items()
                   if k in ('SPS', 'agent_steps', 'learning_rate') or k.startswith(('environment/', 'losses/'))}
            rows.append(row)
            print(f"{c.name}: {row['agent_steps']:>13,.0f} agent-steps {time.perf_counter() - t0:6.1f} s  "
                  f"{epochs[-1]['sps']:>11,.0f} agent-steps/s  score {row.get('score', float('nan')):.2f}  "
                  f"return {row.get('episode_return', float('nan')):.3f}", flush=True)
        if time.perf_counter() - last_save > c.save_every:
            save(model, c, agent_steps=int(trainer.global_step), seconds=time.perf_counter() - t0)
            last_save = time.perf_counter()
    seconds = time.perf_counter() - t0
    trainer.utilization.stop(); vecenv.close()
    save(model, c, agent_steps=int(trainer.global_step), seconds=seconds)
    warm = [e['sps'] for e in epochs[len(epochs)//5:]] or [0.0]   # per-epoch rates after the first fifth (warm-up)
    summary = dict(config=asdict(c), device=device, agents=vecenv.num_agents, batch_size=trainer.config['batch_size'],
                   agent_steps=int(trainer.global_step), seconds=seconds,
                   agent_steps_per_s=trainer.global_step / seconds,
                   median_epoch_agent_steps_per_s=float(np.median(warm)),
                   epochs=epochs, log=rows, torch=torch.__version__)
    atomic_write_json(Path(c.out)/f'{c.name}.json', summary)
    print(f"{c.name}: {summary['agent_steps']:,} agent-steps in {seconds:.1f} s: "
          f"{summary['agent_steps_per_s']:,.0f} agent-steps/s (median epoch "
          f"{summary['median_epoch_agent_steps_per_s']:,.0f}) on {device}", flush=True)

if __name__ == '__main__': main()
