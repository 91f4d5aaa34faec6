"""Snake weights between genome_lab and bench/gpu_snake.py (which runs on a GPU machine without genome_lab installed).

    python bench/gpu_weights.py export OUT.safetensors   # PufferSnake's weights as PuffeRL's model holds them
    python bench/gpu_weights.py summarize OUT.json RUN.json ...   # gpu_snake.py's run logs, condensed to commit

`export` writes the founder PufferSnake (PufferLib's resources/snake/snake_weights.bin as `founding_genomes` reads it)
under PufferLib's parameter names (`load_linear_lstm` into `snake_model`); `read_trained` turns a gpu_snake.py weight
file back into a `LinearLSTM` genome with the run's metadata; `summarize` keeps of gpu_snake.py's run logs (one JSON
per run, about 400 KB each) the settings, rates and totals, and every k-th log row (at most 100 per run).
"""
import json
from dataclasses import dataclass, field
from genome_lab.core import atomic_write_json, checkpoint_header
from pathlib import Path
from typing import Annotated
import torch
from safetensors.torch import save_file, load_file
from genome_lab.arenas.policies import LinearLSTM
from genome_lab.registry.store import founding_genomes
from genome_lab.rl.training import snake_model, load_linear_lstm, to_linear_lstm
from kit import parse

@dataclass
class WeightsCommand:
    "What to do: `export OUT.safetensors` or `summarize OUT.json RUN.json ...`."
    command: Annotated[str, "'export' or 'summarize'"] = ''
    paths: Annotated[list[str], 'export: OUT.safetensors; summarize: OUT.json RUN.json ...'] = field(default_factory=list)

    def __post_init__(self):
        if self.command and (self.command, min(len(self.paths), 2)) not in (('export', 1), ('summarize', 2)):
            raise ValueError(f"{self.command} {' '.join(self.paths)}: write `export OUT.safetensors` or "
                             "`summarize OUT.json RUN.json ...`")

def export_puffersnake(path:str|Path)->Path:
    "PufferSnake's parameters, named as in PufferLib's `Recurrent(Snake)` (shared LSTM-cell tensors once), to `path`."
    pol = next(p for g, p in founding_genomes() if g.name == 'PufferSnake')
    model = load_linear_lstm(snake_model(), pol)
    save_file({k: v.detach().contiguous() for k, v in model.named_parameters()}, str(path))
    return Path(path)

def read_trained(path:str|Path)->tuple: # (LinearLSTM, the run's metadata dict)
    "The `LinearLSTM` genome of a bench/gpu_snake.py weight file and its metadata (settings, agent-steps, seconds)."
    meta = checkpoint_header(path, 'gpu_snake')   # ValueError for another kind of file
    model, got = snake_model(), load_file(str(path))
    own = dict(model.named_parameters())   # the LSTM cell's tensors shared with the LSTM once, as `export` writes them
    if set(got) != set(own):
        raise ValueError(f"{path} holds {sorted(got)}, not PufferLib's snake model's {sorted(own)}")
    with torch.no_grad():
        for k, v in got.items(): own[k].copy_(v)
    return to_linear_lstm(model), meta

def summarize(out:str|Path, runs:list, rows:int=100)->dict: # {run name: summary}
    "gpu_snake.py's run logs `runs` without the per-epoch list, every k-th log row kept (at most `rows`), into `out`."
    got = {}
    for r in runs:
        d = json.loads(Path(r).read_text())
        log = d.pop('log'); d.pop('epochs')
        d['log'] = log[::max(1, -(-len(log) // rows))] + log[-1:]
        got[d['config']['name']] = d
    atomic_write_json(out, got)
    return got

if __name__ == '__main__':
    c = parse(WeightsCommand, doc=__doc__, positional=('command', 'paths'), required=('command', 'paths'))
    if c.command == 'export': print(f"wrote {export_puffersnake(c.paths[0])}")
    else: print(f"wrote {c.paths[0]}: runs {list(summarize(c.paths[0], c.paths[1:]))}")
