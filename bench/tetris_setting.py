"""Which setting judges tetris games as Tetris (issue 54): each player's boards are recorded once, and every setting's
head-to-head games follow from them as the tournament plays them.

A side-by-side tetris game gives every genome its own copies of the game's seeded boards (`play_side_by_side`, 40), and
the players here are greedy, so a board's play does not depend on the opponent: each player plays the boards of
`--games` games at each of the `--seeds` once (`record`: every board's first game, the tick it topped out, its lines
and score then, and its lines and score at each cap it lived to), and a game of two players at a setting is the two
records judged by that setting's rule (`judge`). A few games are played again by the tournament itself
(`play_batch` at the arena's settings) and must agree with the records (`agree`).

Settings: a cap of `--ticks` (the season's 1000) with three rules for a board that tops out before it: 'keep' (it keeps
the lines it made: the tetris arena before issue 54), 'zero' (it counts no lines and no score) and 'survival' (genomes
ranked by their boards' mean ticks alive first, then lines); and the 'keep' rule at a long cap (`--long-ticks`, the
env's own 10,000), on fewer games: do the references top out before it? For each setting, the project's lead rule
(`lead_verdict`: ahead at every seed, pooled one-sided sign test p < 0.01) of every player against every founder, each
player's lines per board and boards lost per game, and how many of the pairs keep one direction at every seed.

The evolved players are the programs producer's search as it was before issue 54 (training games that kept a lost
board's lines: `EVOLVED`), the fast-but-risky programs the issue names. Resumable: `--root` keeps each record.
Usage: nice -n 5 python bench/tetris_setting.py --root /work/main/runs/tetris/setting --out nbs/measured/tetris_setting.json
"""
import hashlib, json, platform, sys, time
from dataclasses import dataclass, asdict, field
from pathlib import Path
from typing import Annotated
import numpy as np
from genome_lab.arenas.arena import TetrisArena, arena_season
from genome_lab.arenas.policies import GenomeGroup, load_pufferlib_policy
from genome_lab.programs.program_policy import ProgramPolicy
from genome_lab.programs.tetris_players import player_source, TETRIS_BASELINES, NAIVE_WEIGHTS, MAX_TICKS
from genome_lab.tournaments.ranking import lead_verdict
from genome_lab.tournaments.tournament import game_seed, play_batch
from genome_lab.core import atomic_write_json
from kit import Memo, parse

FOUNDERS = ('Dellacherie', 'ElTetris', 'PufferTetris') # the tetris arena's non-random founders
# The programs producer's top programs (by training lines) of a search as it was before issue 54: ProgramSettings at
# bench/programs_climb.py's PRESET (8 training games of 1000 ticks, a lost board keeping its lines), seed 0, 1200 s
# on this machine (/work/main/runs/tetris/old_search). Every feature the template has, weighted as found.
EVOLVED = {
    'search-prog53': dict(landing_height=-0.971, rows_cleared=3.1829, eroded_cells=0.2369, row_transitions=-0.5383,
                          col_transitions=-1.1642, holes=-4.9742, hole_rows=0.01, wells=-0.8994, aggregate_height=0.328,
                          max_height=-0.04, bumpiness=0.4764, ticks=-0.4361), # generation 12 (CMA-ES): 96.875 training lines
    'search-prog36': dict(landing_height=-1.1985, rows_cleared=3.4181268101392694, row_transitions=-0.6231,
                          col_transitions=-1.0574, holes=-4.0832, wells=-0.8297, bumpiness=0.0822, ticks=-0.2859), # generation 8: 92.875
    'search-prog5': dict(landing_height=-1.0, rows_cleared=3.4181268101392694, row_transitions=-3.2178882868487753,
                         col_transitions=-9.348695305445199, holes=-7.899265427351652, wells=-3.3855972247263626), # generation 1: 90.125
}
RULES = ('keep', 'zero', 'survival') # what a board that tops out before the cap counts (see the module's docstring)

several = lambda *v: field(default_factory=lambda: list(v))   # a list field's default

@dataclass
class BenchOptions:
    "The bench's options."
    root: Annotated[str, "the kept folder: records.json (resumed)"] = 'runs/tetris_setting'
    seeds: Annotated[list[int], "measurement tournament seeds (not the lead check's CHECK_SEEDS)"] = several(11, 12, 13)
    games: Annotated[int, 'games per seed (the lead rule asks 40)'] = 40
    ticks: Annotated[int, "the season's cap"] = 1000
    long_caps: Annotated[list[int], 'longer caps, the last the longest, read from the same longer games'] = several(2000, 3000, 5000, MAX_TICKS)
    long_games: Annotated[int, 'games at the longer caps, at the first seed'] = 2
    long_players: Annotated[list[str], 'players measured at the longer caps'] = several('Dellacherie', 'ElTetris', 'search-prog53')
    batch: Annotated[int, 'games a sandboxed program plays at once (one child for their boards)'] = 8
    agree_games: Annotated[int, 'games of each founder pair replayed by the tournament to check the records'] = 2
    out: Annotated[str, 'the figures file, e.g. nbs/measured/tetris_setting.json'] = ''

def program(name:str, weights:dict)->ProgramPolicy:
    "The player program with `weights` (every template feature, those not given weighted 0) as a program genome's policy."
    src = player_source(dict.fromkeys(NAIVE_WEIGHTS, 0.0) | weights, name)
    return ProgramPolicy('tetris', src, hashlib.sha256(src.encode()).hexdigest())

def players()->dict: # {name: policy}
    "The founders and the evolved programs."
    out = {n: program(n, TETRIS_BASELINES[n][0]) for n in ('Dellacherie', 'ElTetris')}
    return out | {'PufferTetris': load_pufferlib_policy('tetris')} | {n: program(n, w) for n, w in EVOLVED.items()}

def record(policy, seeds:list, # one game per seed
           boards:int, ticks:int, caps:tuple, batch:int)->dict: # {'death', 'lines', 'score', 'cap_lines', 'cap_score'}
    """Each board's first game of `policy` on the boards of side-by-side games seeded `seeds`, greedy, `batch` games at
    once: `death` (the tick it topped out; 0: alive at `ticks`), its `lines` and `score` then, and `cap_lines` /
    `cap_score` at each cap (`{cap: (games, boards)}`; those of a board alive then, or of a game the env ended itself
    at 10,000 ticks, which is not lost)."""
    out = dict(death=[], lines=[], score=[], cap_lines={c: [] for c in caps}, cap_score={c: [] for c in caps})
    for k in range(0, len(seeds), batch):
        part = seeds[k:k + batch]; K = len(part)
        arenas = [TetrisArena(num_envs=boards) for _ in part]
        group = GenomeGroup([policy]*K, boards)
        obs = [a.reset(s) for a, s in zip(arenas, part)]
        death, lines, score, ended, end_lines, end_score = (np.zeros((K, boards)) for _ in range(6))
        at = {c: (np.zeros((K, boards)), np.zeros((K, boards))) for c in caps}
        state = group.initial_state()
        try:
            for t in range(1, ticks + 1):
                act, state = group.act(np.concatenate(obs), state, True)
                for e, a in enumerate(arenas):
                    obs[e], _, done = a.step(act[e*boards:(e + 1)*boards])
                    if not done.any(): continue
                    eps = a.pop_episodes()
                    for i, j in enumerate(eps.agent):
                        if death[e, j] or ended[e, j]: continue   # its first game is over
                        if eps.length[i] < MAX_TICKS: death[e, j], lines[e, j], score[e, j] = t, eps.lines[i], eps.score[i]
                        else: ended[e, j], end_lines[e, j], end_score[e, j] = t, eps.lines[i], eps.score[i]   # the env's own end
                if t in at:
                    for e, a in enumerate(arenas):
                        r, over = a.running(), ended[e] > 0   # a game the env ended: its final count
                        at[t][0][e], at[t][1][e] = np.where(over, end_lines[e], r.lines), np.where(over, end_score[e], r.score)
        finally:
            group.release(state)
            for a in arenas: a.close()
        out['death'] += death.tolist(); out['lines'] += lines.tolist(); out['score'] += score.tolist()
        for c in caps: out['cap_lines'][c] += at[c][0].tolist(); out['cap_score'][c] += at[c][1].tolist()
    return out

def judge(rec:dict, cap:int, rule:str)->np.ndarray: # (games, 3): the rank keys of each game, compared in order
    """A player's statistics in each game of `rec` at `cap` under `rule`, in the order they rank it: 'keep' and 'zero'
    (mean lines, mean score) with a third key 0; 'survival' (mean ticks alive, mean lines, mean score)."""
    d = np.array(rec['death']); alive = (d == 0) | (d > cap)
    cl, cs = np.array(rec['cap_lines'][str(cap)]), np.array(rec['cap_score'][str(cap)])
    lines = np.where(alive, cl, 0 if rule == 'zero' else np.array(rec['lines']))
    score = np.where(alive, cs, 0 if rule == 'zero' else np.array(rec['score']))
    if rule == 'survival': return np.stack([np.where(alive, cap, d).mean(1), lines.mean(1), score.mean(1)], 1)
    return np.stack([lines.mean(1), score.mean(1), np.zeros(len(d))], 1)

def games_of(a:np.ndarray, b:np.ndarray)->dict: # {'wins', 'losses', 'draws'} of a over b, game by game
    "Head-to-head record of two players' `judge` keys, game by game (lexicographic, as `GameResult.ranks`)."
    w = l = 0
    for x, y in zip(map(tuple, a), map(tuple, b)): w, l = w + (x > y), l + (x < y)
    return dict(wins=int(w), losses=int(l), draws=int(len(a) - w - l))

def merged(rec:dict, m:int)->dict:
    "`rec` with every `m` consecutive games' boards as the boards of one game (`m` x as many boards, 1/`m` the games)."
    G, B = np.shape(rec['death']); g = G//m*m
    two = lambda x: np.asarray(x)[:g].reshape(g//m, m*B).tolist()
    return dict(death=two(rec['death']), lines=two(rec['lines']), score=two(rec['score']),
                cap_lines={c: two(v) for c, v in rec['cap_lines'].items()}, cap_score={c: two(v) for c, v in rec['cap_score'].items()})

def setting(recs:dict, seeds:list, cap:int, rule:str, games:int, merge:int=1)->dict:
    """Every player against every founder under one setting: the lead rule's record of each (`lead_check`'s form:
    'checks', 'leads', 'reached'), each player's lines per board and boards lost, and the share of pairs that keep one
    direction (more wins than losses, or fewer) at every seed. `merge` > 1 judges `merge` games' boards as one game
    (an estimate of games with `merge` x the boards, on boards of the same seeds' streams: half as many games at 2, too
    few for the lead rule, so its records hold each founder's wins, losses, p and seeds ahead, no flag)."""
    recs = {n: {s: merged(r, merge) for s, r in rr.items()} for n, rr in recs.items()} if merge > 1 else recs
    keys = {n: {s: judge(recs[n][str(s)], cap, rule) for s in seeds} for n in recs}
    records, one_way = {}, []
    for n in recs:
        checks = [dict(founder=f, seed=s, games=len(keys[n][s]), **games_of(keys[n][s], keys[f][s]))
                  for f in FOUNDERS if f != n for s in seeds]
        leads = {f: lead_verdict([c for c in checks if c['founder'] == f], games//merge, len(seeds)) for f in FOUNDERS if f != n}
        records[n] = (dict(checks=checks, leads=leads, reached=all(v['lead'] for v in leads.values())) if merge == 1 else
                      {f: {k: v[k] for k in ('wins', 'losses', 'draws', 'p', 'ahead_at')} for f, v in leads.items()})   # no rule's flag
        one_way += [len({np.sign(c['wins'] - c['losses']) for c in checks if c['founder'] == f}) == 1 for f in leads]
    figures = {}
    for n in recs:
        d = np.concatenate([np.array(recs[n][str(s)]['death']) for s in seeds])
        lost = (d > 0) & (d <= cap)
        kk = np.concatenate([keys[n][s] for s in seeds])
        figures[n] = dict(lines_per_board=float(kk[:, 1 if rule == 'survival' else 0].mean()),
                          boards_lost_per_game=float(lost.sum(1).mean()), board_loss_rate=float(lost.mean()))
    return dict(cap=cap, rule=rule, boards=len(recs[FOUNDERS[0]][str(seeds[0])]['death'][0]), games=games//merge,
                records=records, players=figures, one_way_share=float(np.mean(one_way)))

def agree(recs:dict, pols:dict, seed:int, games:int, cap:int)->list: # [{'pair', 'rule', 'game', 'recorded', 'played'}]
    """Founder pairs' first `games` games at `seed` played by the tournament (`play_batch`, a lost board keeping its
    lines and scoring nothing: `topout_share` 1 and 0), beside their records judged by the rules 'keep' and 'zero'."""
    out = []
    for rule, share in (('keep', 1.0), ('zero', 0.0)):
        for a, b in [('Dellacherie', 'ElTetris'), ('ElTetris', 'PufferTetris')]:
            res = play_batch('tetris', [[pols[a], pols[b]]]*games, [game_seed(seed, k) for k in range(games)],
                             arena_season('tetris').agents, cap, topout_share=share)
            for k, r in enumerate(res):
                rec = [judge(recs[n][str(seed)], cap, rule)[k, 0] for n in (a, b)]
                out.append(dict(pair=f"{a} vs {b}", rule=rule, game=k, recorded=[float(x) for x in rec],
                                played=[float(x) for x in r.lines]))
    return out

def main(argv=None):
    o = parse(BenchOptions, doc=__doc__, argv=argv)
    seeds = [int(s) for s in o.seeds]
    root = Path(o.root); root.mkdir(parents=True, exist_ok=True)
    boards = arena_season('tetris').agents
    # a record's step is named by its player and seed (an evolved player's name is its program's): players may be added
    memo = Memo(root/'records.json', dict(games=o.games, ticks=o.ticks, long_caps=o.long_caps, long_games=o.long_games,
                                          boards=boards))
    pols, recs = players(), {}
    for n, pol in pols.items():
        for s in seeds:
            t = time.perf_counter()
            recs.setdefault(n, {})[str(s)] = memo.step(f"{n} {s}", lambda: record(
                pol, [game_seed(s, k) for k in range(o.games)], boards, o.ticks, (o.ticks,), o.batch) | dict(
                seconds=round(time.perf_counter() - t, 1)))
            print(n, s, recs[n][str(s)]['seconds'], 's', flush=True)
    long, top = {}, max(o.long_caps)
    for n in o.long_players:
        t = time.perf_counter()
        long[n] = memo.step(f"{n} long", lambda: record(pols[n], [game_seed(seeds[0], k) for k in range(o.long_games)],
                                                         boards, top, (o.ticks, *o.long_caps), o.batch)
                            | dict(seconds=round(time.perf_counter() - t, 1)))
        print(n, 'long', long[n]['seconds'], 's', flush=True)
    checked = memo.step('agree rules', lambda: agree(recs, pols, seeds[0], o.agree_games, o.ticks))
    assert all(c['recorded'] == c['played'] for c in checked), f"the records disagree with the tournament: {checked}"
    settings = [setting(recs, seeds, o.ticks, r, o.games, m) for m in (1, 2) for r in RULES]
    longer = {n: dict(boards=int(np.size(r['death'])), seconds_per_game=r['seconds']/o.long_games,
                      lost_at=[int(x) for x in np.sort(np.array(r['death']).ravel()) if x > 0],
                      caps={c: {rule: float(judge(r, c, rule)[:, 0].mean()) for rule in ('keep', 'zero')} |
                               dict(lost=int(np.sum((np.array(r['death']) > 0) & (np.array(r['death']) <= c))))
                            for c in (o.ticks, *o.long_caps)}) for n, r in long.items()}
    res = dict(command='python bench/tetris_setting.py ' + ' '.join(sys.argv[1:] if argv is None else argv),
               machine=f"{platform.node()}: 2 CPU cores, shared with other jobs while measured",
               options=asdict(o), boards_per_game=boards, founders=list(FOUNDERS), evolved=EVOLVED,
               seconds_per_game={n: float(np.mean([recs[n][str(s)]['seconds'] for s in seeds]))/o.games for n in recs},
               settings=settings, longer=longer, agree=checked)
    if o.out: atomic_write_json(o.out, res); print(f"figures written to {o.out}")
    return res

if __name__ == '__main__': main()
