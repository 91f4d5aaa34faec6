"""What the PPO benches (ppo_curve.py, ppo_league.py, ppo_pbt.py) share: their command line from their settings
dataclass and `PPOConfig` (`kit.parse`), the output path under nbs/measured/, one torch thread, the machine line."""
import datetime, json, os
import torch
from genome_lab.rl.training import PPOConfig
from genome_lab.core import machine
from genome_lab.core import measured_dir
from kit import parse

def start(settings:type, # the bench's own settings dataclass (with an `out` field)
          doc:str, prefix:str, # the bench's docstring; the name of its JSON under nbs/measured/
          argv:list|None=None)->tuple: # the arguments (None: the command line)
    "Parse the flags: (parsed namespace for `config_from_args(PPOConfig, ...)`, the bench's settings, the JSON path to write)."
    (b, _), a = parse(settings, PPOConfig, doc=doc, argv=argv, ns=True)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    return a, b, b.out or str(measured_dir()/f'{prefix}_{datetime.date.today()}.json')
