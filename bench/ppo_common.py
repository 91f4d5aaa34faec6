"""What the PPO benches (ppo_curve.py, ppo_league.py, ppo_pbt.py) share: their command line from their settings
dataclass and `PPOConfig` (`config_parser`), the output path under nbs/measured/, one torch thread, the machine line."""
import datetime, json, os
import torch
from genome_lab.training import PPOConfig
from genome_lab.core import machine
from genome_lab.core import measured_dir, config_parser, config_from_args

def start(settings:type, # the bench's own settings dataclass (with an `out` field)
          doc:str, prefix:str)->tuple: # the bench's docstring; the name of its JSON under nbs/measured/
    "Parse the flags: (parsed namespace for `config_from_args(PPOConfig, ...)`, the bench's settings, the JSON path to write)."
    a = config_parser(settings, PPOConfig, description=doc.splitlines()[0], allow_abbrev=False).parse_args()
    b = config_from_args(settings, a)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    return a, b, b.out or str(measured_dir()/f'{prefix}_{datetime.date.today()}.json')
