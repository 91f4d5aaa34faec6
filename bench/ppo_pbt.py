"""Population-based training of PuffeRL runs with Ray Tune's PBT: exploit/explore events, the policy-ops table and a
fixed-seed evaluation ladder with its rank stability.

1. `run_pbt`: --members members trained from PufferLib's initialisation on PufferLib's map (256 snakes, self-play),
   taking turns on one CPU, --iterations of --steps agent-steps each; after every iteration the bottom quarter load a
   top member's checkpoint (exploit) and perturb its learning rate, entropy and clip coefficients (explore). The metric
   is a fixed-seed evaluation (seed 1, 64 snakes, greedy, length at death from the arena's episodes), never the reward.
2. `record_pbt` into --registry: each member's last policy as an `rl` genome, one policy-ops row per member version.
3. `evaluation_ladder` of the last members with PufferSnake and RandomSnake as anchors, seeds 101-104 (64 snakes
   each): ranks, and Kendall's tau between the rankings on seeds {101, 102} and {103, 104}, members alone and with
   the anchors; `reward_hacking_guard`.
Writes --out (JSON, committed under nbs/measured/ and read by 51_ppo_producer).
Usage: python bench/ppo_pbt.py --storage runs/ppo-pbt --registry runs/ppo-registry [--resume]
(flags: BenchOptions' and PPOConfig's fields)
"""
import datetime
from dataclasses import asdict, dataclass
from typing import Annotated
from scipy.stats import kendalltau
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.rl.training import PPOConfig
from genome_lab.rl.pbt import run_pbt, record_pbt, evaluation_ladder, reward_hacking_guard, PBT_HYPER
from genome_lab.core import machine
from genome_lab.core import atomic_write_json, config_from_args
from ppo_common import start

@dataclass
class BenchOptions:
    "The bench's own settings (the members' are `PPOConfig`'s flags)."
    storage: Annotated[str, 'Ray Tune\'s experiment folder'] = 'runs/ppo-pbt'
    registry: Annotated[str, 'registry of the members\' genomes and the policy-ops table'] = 'runs/ppo-registry'
    run: Annotated[str, 'the run\'s name in policy_ops'] = 'pbt'
    resume: Annotated[bool, 'finish an interrupted run in storage'] = False
    members: Annotated[int, 'population size'] = 4
    iterations: Annotated[int, 'training iterations of every member'] = 6
    steps: Annotated[int, 'agent-steps per member iteration'] = 262_144
    rank_by: Annotated[str, "PBT's ranking: 'score' (fixed-seed solo score) or 'rating' (games against the founders)"] = 'score'
    out: Annotated[str, 'JSON to write (default nbs/measured/ppo_pbt_DATE.json)'] = ''

def main():
    a, b, out = start(BenchOptions, __doc__, 'ppo_pbt')
    base = config_from_args(PPOConfig, a)
    res = run_pbt(base, b.members, b.iterations, b.steps, storage=b.storage, resume=b.resume, seed=base.seed,
                  rank_by=b.rank_by)
    print(f"PBT: {b.members} members x {b.iterations} iterations x {b.steps:,} agent-steps in {res.seconds:.0f} s; "
          f"{len(res.events)} exploit/explore events ({len(res.pbt_log)} lines in Ray Tune's pbt_global.txt)", flush=True)
    cols = ['member', 'version', 'agent_steps', 'score', 'score_std', 'n', 'train_score', 'train_return', *PBT_HYPER, 'event', 'parent_member', 'parent_version']
    print(res.rows[cols].round(4).to_string(index=False))
    registry = Registry(b.registry)
    founders = seed_founders(registry)
    ops = record_pbt(registry, res, b.run)
    finals = {g: registry.policy(g) for g in ops.genome.dropna()}
    anchors = {'PufferSnake': registry.policy(founders['PufferSnake']), 'RandomSnake': registry.policy(founders['RandomSnake'])}
    ladder, tau_all = evaluation_ladder({**finals, **anchors}, seeds=(101, 102, 103, 104), snakes=64)
    members = ladder[ladder.name.isin(list(finals))]
    tau_members = float(kendalltau(members.score_a, members.score_b).statistic)
    print(f"\nladder (seeds 101-104, 64 snakes each): Kendall tau between seeds {{101,102}} and {{103,104}}: members {tau_members:.3f}, "
          f"with the anchors {tau_all:.3f}")
    print(ladder.round(3).to_string(index=False))
    guard = reward_hacking_guard(res.rows)
    print(guard.round(4).to_string(index=False))
    log = [dict(target=l[0], clone=l[1], target_iteration=l[2], clone_iteration=l[3],
                old={k: l[4][k] for k in PBT_HYPER}, new={k: l[5][k] for k in PBT_HYPER}) for l in res.pbt_log]
    atomic_write_json(out, dict(machine=machine(), date=str(datetime.date.today()), config=asdict(base), members=b.members,
                                  iterations=b.iterations, steps=b.steps, seconds=res.seconds, rows=res.rows.to_dict('records'),
                                  events=res.events.to_dict('records'), pbt_log=log, policy_ops=ops.to_dict('records'),
                                  ladder=ladder.to_dict('records'), tau_members=tau_members, tau_with_anchors=tau_all,
                                  guard=guard.to_dict('records')))
    print(f"wrote {out}")

if __name__ == '__main__': main()
