"""PuffeRL (PufferLib 3.0's PPO trainer) on CUDA trains a snake on maps like the snake season tournament's, with the
package's recipe (`finetune_recipe`, 50_training) for a wall-clock budget.

The training half of bench/gpu_check.sh (issues 31, 35 and 44). The GPU machine has the repository's root on PYTHONPATH
(genome_lab is not installed there: gpu_check.sh's wheels and the image's torch, numpy and pandas are enough). The run
is a `PPORun` with `finetune_recipe`'s settings (its one home): PufferLib's Ocean Snake in C on the season's maps, every
map rebuilt fresh after each game (`TournamentMaps` in PufferLib's Multiprocessing processes on CUDA; in this process
on the CPU), PufferLib's `Recurrent(Snake)` model (the layout of PufferSnake's weights), self-play from --init
(PufferSnake's weights under PufferLib's names: bench/gpu_weights.py writes them) or PufferLib's initialisation, and
PuffeRL. The flags below change the recipe's settings; their defaults are the recipe's on CUDA, with the H200 run's
8 workers x 128 maps.

Writes to --out: NAME.safetensors (the model's parameters under PufferLib's names, with the run's settings and its
agent-steps in the metadata), rewritten every --save-every seconds so that a killed run still leaves weights, and
NAME.json (settings, agent-steps, wall seconds, agent-steps/s overall and per epoch, PuffeRL's log rows).
Usage: python bench/gpu_snake.py --out DIR --name NAME [--init PufferSnake.safetensors] [--seconds 300] [flags below]
"""
import json, time
from dataclasses import dataclass, asdict, replace
from typing import Annotated
from pathlib import Path
import numpy as np
import torch
from safetensors.torch import save as st_save, load_file
from genome_lab.core import atomic_write, atomic_write_json
from kit import parse
from genome_lab.rl.training import finetune_recipe
from genome_lab.rl.ppo_run import PPORun

R = finetune_recipe(device='cuda')   # the recipe's settings on CUDA: the flags' defaults

@dataclass
class GPUSnakeConfig:
    "A PuffeRL run of a snake on tournament-like maps (the flags of bench/gpu_snake.py)."
    out: Annotated[str, 'folder of the weights and the log'] = 'runs/gpu-snake'
    name: Annotated[str, 'file name stem of this run'] = 'snake'
    init: Annotated[str, 'start weights (safetensors, PufferLib names); empty: PufferLib initialisation'] = ''
    device: Annotated[str, 'torch device'] = 'cuda'
    backend: Annotated[str, "maps stepped by 'multiprocessing' (PufferLib's) or 'serial' (here); 'auto': the first on CUDA"] = 'auto'
    seconds: Annotated[float, 'wall-clock budget of training (stops after the epoch that passes it)'] = 300.0
    total_timesteps: Annotated[int, "agent-steps of the learning rate's cosine schedule (and a cap)"] = R.total_timesteps
    workers: Annotated[int, 'env processes (Multiprocessing backend)'] = 8
    maps_per_worker: Annotated[int, 'maps in each env process'] = 128
    width: Annotated[int, 'map width in cells'] = R.width
    height: Annotated[int, 'map height in cells'] = R.height
    snakes: Annotated[int, 'snakes per map'] = R.num_snakes
    food: Annotated[int, 'food per map'] = R.num_food
    max_snake_length: Annotated[int, "a snake's length cap"] = R.max_snake_length
    reset_every: Annotated[int, 'steps between fresh maps'] = R.reset_every
    learning_rate: Annotated[float, "Adam's step size (cosine-annealed to 0 over total_timesteps)"] = R.hyper.learning_rate
    clip_coef: Annotated[float, "PPO's clip"] = R.hyper.clip_coef
    ent_coef: Annotated[float, 'entropy bonus'] = R.hyper.ent_coef
    minibatch_size: Annotated[int, 'agent-steps per gradient step'] = R.hyper.minibatch_size
    bptt_horizon: Annotated[int, 'steps per training segment'] = R.hyper.bptt_horizon
    seed: Annotated[int, 'seeds torch and the maps'] = 0
    save_every: Annotated[float, 'seconds between weight files'] = 30.0

def run_config(c:GPUSnakeConfig): # the `PPOConfig` of the run
    "`finetune_recipe` with this run's flags."
    cfg = finetune_recipe(device=c.device, maps=c.workers * c.maps_per_worker, workers=c.workers, backend=c.backend,
                          total_timesteps=c.total_timesteps, width=c.width, height=c.height, num_snakes=c.snakes,
                          num_food=c.food, max_snake_length=c.max_snake_length, reset_every=c.reset_every,
                          keep_every=2**62, checkpoint_every=2**62, seed=c.seed)
    return replace(cfg, hyper=replace(cfg.hyper, learning_rate=c.learning_rate, clip_coef=c.clip_coef,
                                      ent_coef=c.ent_coef, minibatch_size=c.minibatch_size, bptt_horizon=c.bptt_horizon))

def params(model)->dict: # {PufferLib name: tensor on the CPU}, shared tensors once (the LSTM cell shares the LSTM's)
    return {k: v.detach().float().cpu().contiguous() for k, v in model.named_parameters()}

def save(model, c:GPUSnakeConfig, **meta):
    meta = {'gpu_snake': json.dumps(dict(config=asdict(c), **meta))}
    atomic_write(Path(c.out)/f'{c.name}.safetensors', st_save(params(model), metadata=meta))

def main():
    c = parse(GPUSnakeConfig, doc=__doc__)
    Path(c.out).mkdir(parents=True, exist_ok=True)
    run = PPORun(run_config(c), display=None, name=c.name)   # PufferLib's processes fork before CUDA starts
    if c.init:
        got, own = load_file(c.init), dict(run.model.named_parameters())
        if set(got) != set(own):
            raise ValueError(f"{c.init} holds {sorted(got)}, not PufferLib's snake model's {sorted(own)}")
        with torch.no_grad():
            for k, v in got.items(): own[k].copy_(v)
    t, epochs, t0, last_save = run.trainer, [], time.perf_counter(), time.perf_counter()
    device = torch.cuda.get_device_name() if run.device.startswith('cuda') else 'cpu'
    print(f"{c.name}: {run.vecenv.num_agents:,} snakes on {c.workers * c.maps_per_worker} maps of {c.width}x{c.height}, "
          f"batch {t.config['batch_size']:,}, device {device}", flush=True)
    while run.agent_steps < c.total_timesteps and time.perf_counter() - t0 < c.seconds:
        m = run.step()
        epochs.append(dict(agent_steps=run.agent_steps, seconds=time.perf_counter() - t0, sps=m['charts/SPS']))
        print(f"{c.name}: {run.agent_steps:>13,} agent-steps {time.perf_counter() - t0:6.1f} s  {m['charts/SPS']:>11,.0f} "
              f"agent-steps/s  score {m['charts/train_score'] or float('nan'):.2f}", flush=True)
        if time.perf_counter() - last_save > c.save_every:
            save(run.model, c, agent_steps=run.agent_steps, seconds=time.perf_counter() - t0)
            last_save = time.perf_counter()
    seconds = time.perf_counter() - t0
    run.close()
    save(run.model, c, agent_steps=run.agent_steps, seconds=seconds)
    warm = [e['sps'] for e in epochs[len(epochs)//5:]] or [0.0]   # per-epoch rates after the first fifth (warm-up)
    summary = dict(config=asdict(c), device=device, agents=run.vecenv.num_agents, batch_size=t.config['batch_size'],
                   agent_steps=run.agent_steps, seconds=seconds, agent_steps_per_s=run.agent_steps / seconds,
                   median_epoch_agent_steps_per_s=float(np.median(warm)), epochs=epochs, log=run.log.rows,
                   torch=torch.__version__)
    atomic_write_json(Path(c.out)/f'{c.name}.json', summary)
    print(f"{c.name}: {summary['agent_steps']:,} agent-steps in {seconds:.1f} s: "
          f"{summary['agent_steps_per_s']:,.0f} agent-steps/s (median epoch "
          f"{summary['median_epoch_agent_steps_per_s']:,.0f}) on {device}", flush=True)

if __name__ == '__main__': main()
