"""A producer at work against the trainer alone (issue 44): the ppo producer's agent-steps/s over its budget beside
the standalone trainer's with the same settings and threads, measured in the same run.

- The producer: `genome-lab produce ppo --budget-s B` (PPOProducer, 51_ppo_producer, with `PPOSettings`' defaults or the
  flags below) in a process of its own, on a fresh registry of the founders, one torch thread: its agent-steps (both
  learners', from its last step's metrics) over the process's wall time, start-up (imports, the first checkpoint's
  reading, PuffeRL's construction), offers (evaluation, checkpoint, registration) and scalars included.
- The trainer alone: the producer's fine-tune (`PPOProducer.configs`: `finetune_recipe` from PufferSnake) as a bare
  `PPORun` stepped in this process, one torch thread, nothing kept, checkpointed or logged; measured for --standalone-s
  before the producer and again after it (the machine's load drifts), its rate the two sessions' agent-steps over their
  seconds, PuffeRL's construction left out.
Rates are also given per second of CPU time (the process's own, the producer's as a child), steadier on a shared
machine. Writes --out (default nbs/measured/producer_speed.json): {ppo: {agent_steps_per_s, standalone_per_s, ratio,
seconds, ...}}. Usage: OMP_NUM_THREADS=1 python bench/producer_speed.py [--budget-s 600] [--standalone-s 150]
"""
import datetime, json, os, resource, subprocess, sys, tempfile, time
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Annotated
import torch
from genome_lab.core import (ProducerContext, atomic_write_json, config_argv,
                             measured_dir, machine)
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.ecosystem.workers import console_script
from genome_lab.rl.ppo_run import PPORun
from genome_lab.rl.ppo_producer import PPOProducer, PPOSettings
from kit import parse

@dataclass
class SpeedOptions:
    "How long each part is measured."
    budget_s: Annotated[float, "the producer's budget"] = 600.0
    standalone_s: Annotated[float, 'seconds of each of the two standalone sessions'] = 150.0
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'producer_speed.json')

def standalone(settings:PPOSettings, registry:Registry, seconds:float)->dict: # {'agent_steps', 'seconds', 'cpu'}
    "The producer's fine-tune as a bare `PPORun`, stepped for `seconds` after its construction."
    cfg = PPOProducer(ProducerContext(registry, 1, settings, Path(tempfile.mkdtemp()))).configs(registry.by_name('PufferSnake'))['finetune']
    run = PPORun(cfg, None, registry, display=None)
    t0, c0, s0 = time.perf_counter(), time.process_time(), run.agent_steps
    while time.perf_counter() - t0 < seconds: run.step()
    out = dict(agent_steps=run.agent_steps - s0, seconds=time.perf_counter() - t0, cpu=time.process_time() - c0)
    run.close()
    return out

def producer(settings:PPOSettings, root:Path, budget_s:float)->dict: # {'agent_steps', 'seconds', 'cpu', 'result'}
    "`genome-lab produce ppo` for `budget_s` in a process of its own, timed from its start to its exit."
    cmd = [str(console_script()), 'produce', 'ppo', f'--registry={root}', f'--budget-s={budget_s}', '--threads=1',
           *config_argv(settings)]
    c0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    seconds, c1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode: sys.exit(f"the producer failed ({r.returncode}): {r.stderr[-2000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return dict(agent_steps=res['metrics']['agent_steps'], seconds=seconds,
                cpu=(c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime), result=res)

def main():
    o, settings = parse(SpeedOptions, PPOSettings, doc=__doc__)
    torch.set_num_threads(1)
    load0 = os.getloadavg()
    print(f"machine: {json.dumps(machine())}; load {load0}; settings {asdict(settings)}", flush=True)
    root = Path(tempfile.mkdtemp(prefix='producer-speed-'))
    reg = Registry(root/'registry'); seed_founders(reg)
    before = standalone(settings, reg, o.standalone_s)
    print(f"standalone before: {before['agent_steps'] / before['seconds']:,.0f} agent-steps/s", flush=True)
    prod = producer(settings, root/'registry', o.budget_s)
    print(f"producer: {prod['agent_steps']:,} agent-steps in {prod['seconds']:.1f} s: "
          f"{prod['agent_steps'] / prod['seconds']:,.0f} agent-steps/s; offered {len(prod['result']['offered'])}", flush=True)
    after = standalone(settings, reg, o.standalone_s)
    print(f"standalone after: {after['agent_steps'] / after['seconds']:,.0f} agent-steps/s", flush=True)
    alone = {k: before[k] + after[k] for k in before}
    rate, alone_rate = prod['agent_steps'] / prod['seconds'], alone['agent_steps'] / alone['seconds']
    record = dict(date=str(datetime.date.today()), machine=machine(), options=asdict(o), settings=asdict(settings),
                  load_before=load0, load_after=os.getloadavg(),
                  ppo=dict(agent_steps_per_s=rate, standalone_per_s=alone_rate, ratio=rate / alone_rate,
                           seconds=prod['seconds'], agent_steps=prod['agent_steps'], offered=len(prod['result']['offered']),
                           agent_steps_per_cpu_s=prod['agent_steps'] / prod['cpu'],
                           standalone_per_cpu_s=alone['agent_steps'] / alone['cpu'],
                           ratio_cpu=(prod['agent_steps'] / prod['cpu']) / (alone['agent_steps'] / alone['cpu']),
                           standalone_sessions=[before, after]))
    atomic_write_json(o.out, record)
    p = record['ppo']
    print(f"ppo producer {p['agent_steps_per_s']:,.0f} agent-steps/s against the trainer alone {p['standalone_per_s']:,.0f}: "
          f"ratio {p['ratio']:.3f} (per CPU second {p['ratio_cpu']:.3f}); wrote {o.out}")

if __name__ == '__main__': main()
