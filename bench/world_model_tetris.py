"""A tetris world model (72_dream_policy, issue 33): 70_dreaming's `WorldModel` with a tetris board's dims
(`TETRIS_WORLD`) trained on tetris games the project records (71_video_models' `film_tetris`: the placement planner with
Dellacherie's weights and D-REX's noise, the boards' truth), scored by `open_loop_accuracy` at k = 1, 5, 15 on held-out
games against copying the last board.

`--boards` games of `--steps` ticks are filmed at every seed of `--train-seeds` and at `--heldout-seed` (games never
trained on), board b with noise `--noise`[b mod its length]. The model (WorldConfig's flags, as bench/dreaming.py's)
is kept in `--work` and read back from there when a run with the same settings stored it (resume).
Writes the `world_model_tetris` ({"1": {model, baseline, n}, "5", "15"}, as `world_model`) and `world_model_tetris_run`
(data, training, machine) keys of --out (default nbs/measured/dreaming.json), keeping the file's other keys; with
`--skip 0 --key world_model_tetris_no_skip`, the same model without its skip from the input board (the ablation).

    python bench/world_model_tetris.py
    python bench/world_model_tetris.py --skip 0 --key world_model_tetris_no_skip
    python bench/world_model_tetris.py --boards 2 --steps 60 --train-seeds 1 --updates 3   # a smoke run
"""
import datetime, json, tempfile, time
from dataclasses import dataclass, asdict, field
from pathlib import Path
from typing import Annotated
import torch
from safetensors.torch import save_file, load_file
from genome_lab.core import measured_dir, machine
from kit import Memo, parse, write_figures
from genome_lab.imagination.dreaming import Trajectories, WorldConfig, WorldModel, train_world_model, open_loop_accuracy
from genome_lab.imagination.dream_policy import TETRIS_WORLD, tetris_trajectories
from genome_lab.imagination.video_models import TetrisClipConfig

@dataclass
class TetrisWorldOptions:
    "The tetris games filmed, the model trained on them, and where the bench writes."
    boards: Annotated[int, 'games filmed at once (one trajectory each)'] = 16
    steps: Annotated[int, 'ticks per game'] = 1000
    noise: Annotated[str, "chances of a random key, comma-separated, cycled over the boards"] = '0,0.1,0.25,0.5'
    train_seeds: Annotated[str, 'seeds of the training games, comma-separated'] = '1,2,3'
    heldout_seed: Annotated[int, 'seed of the held-out games'] = 9
    world: WorldConfig = field(default_factory=WorldConfig)
    skip: Annotated[float, "the model's skip gain from the input board (TETRIS_WORLD's; 0: no skip, the ablation)"] = \
        TETRIS_WORLD['skip']
    key: Annotated[str, 'the key of --out the accuracies go to (the run under KEY_run)'] = 'world_model_tetris'
    work: Annotated[str, 'folder of the trained model (resume); default: a temporary folder'] = ''
    out: Annotated[str, 'JSON whose --key keys are written'] = str(measured_dir()/'dreaming.json')

def main():
    o = parse(TetrisWorldOptions, doc=__doc__)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}", flush=True)
    t0, cfg = time.perf_counter(), TetrisClipConfig(boards=o.boards, steps=o.steps)
    dims = TETRIS_WORLD | dict(skip=o.skip)
    noise = [float(x) for x in o.noise.split(',')]
    noise = [noise[b % len(noise)] for b in range(o.boards)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(o.work or tmp); work.mkdir(parents=True, exist_ok=True)
        film = lambda s: tetris_trajectories(Path(tmp)/f'games-{s}', s, cfg, noise)
        parts = [film(int(s)) for s in o.train_seeds.split(',')]
        train = Trajectories.concat(parts)
        held = film(o.heldout_seed)
        print(f"filmed {len(train)} training and {len(held)} held-out games of {o.steps} ticks in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        key = dict(world=asdict(o.world), dims=dims, data=[o.boards, o.steps, o.noise, o.train_seeds])
        path, memo = work/f'{o.key}.safetensors', Memo(work/f'{o.key}.json', key, redo=True)
        if path.exists() and 'training' in memo:
            model = WorldModel(o.world.hidden, o.world.embed, **dims); model.load_state_dict(load_file(path))
            training = memo['training']
        else:
            t1 = time.perf_counter()
            model, hist = train_world_model(train, o.world, **dims)
            training = dict(seconds=time.perf_counter() - t1, first_losses=hist.head(50).mean().to_dict(),
                            final_losses=hist.tail(50).mean().to_dict())
            save_file(model.state_dict(), path); memo['training'] = training
        acc = open_loop_accuracy(model.eval(), held, context=o.world.context)
    for k, v in acc.items(): print(f"k={k}: model {v['model']:.4f}, copy-last-board {v['baseline']:.4f} (n={v['n']})")
    run = dict(data=dict(boards=o.boards, steps=o.steps, noise=noise, train_seeds=o.train_seeds,
                         heldout_seed=o.heldout_seed, player='Dellacherie (film_tetris)',
                         train_trajectories=len(train), heldout_trajectories=len(held)),
               world=asdict(o.world), dims=dims, training=training, seconds=time.perf_counter() - t0,
               machine=machine(), date=str(datetime.date.today()))
    write_figures(o.out, {o.key: acc, f'{o.key}_run': run})
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
