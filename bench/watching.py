"""Learning from watching (32_watching, issue 32): games of `--genomes` are filmed as H.264 clips (one per snake, its
head marked), `--label-frac` of the clips keep their true actions, an inverse dynamics model (IDM) is trained on those
and scored on every other clip against the true actions (per genome, with a confusion matrix and failure modes). Then
the first genome's unlabelled clips are pseudo-labelled by the IDM and cloned (31_cloning's `train_clone`); the
baseline is a clone of the true actions of the same snakes' games, trained with the same settings in the same run, and
both are scored on `--eval-seeds` maps they never saw (`compare_scores`, greedy: first episodes from reset and every
death in the `--window` of continuous play, as bench/cloning.py).

Tetris (71_video_models): `--tetris-seeds` games of one board per `--noise` level of the Dellacherie planner are filmed
with the stream's renderer; an IDM trained on `--label-frac` of the clips is scored on the others; a T-REX reward model
learns from the clips of all games but the last `--tetris-test-games` ranked by noise alone, is calibrated on the
labelled clips' true rewards and scored (Spearman) on the held-out games; a latent action model (LAPO) learns from the
training games' transitions without labels and an adapter maps its codes to keys on `--fractions` of labels, against
an IDM trained on the same labels; SkillVQVAEs of `--skill-codes` sizes encode the IDM's 8-key chunks. Last, a season
on a temporary registry of the snake founders with `videos` as producer: the video clone's rank among them.

    python bench/watching.py --json nbs/measured/watching.json
    python bench/watching.py --parts tetris season --json nbs/measured/watching.json   # keeps its snake figures

Prints the figures and the costs; one torch thread by default.
"""
import json, os, shlex, sys, tempfile, time
from dataclasses import dataclass, field
from typing import Annotated
from pathlib import Path
from dataclasses import asdict
from datetime import datetime, timezone
import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from genome_lab.core import atomic_write_json
from kit import parse, read_figures
from genome_lab.arenas.arena import SNAKE_CELLS
from genome_lab.players.cloning import CloneConfig, session_sequences, compare_scores
from genome_lab.players.sessions import load_sessions
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.ecosystem.seasons import SeasonConfig, run_season
from genome_lab.players.watching import (ClipConfig, film, decode_clip, clip_dataset, train_idm,
                                 video_to_trajectory, failure_modes, clone_sequences, FAILURE_MODES)
from genome_lab.imagination.video_models import (TetrisClipConfig, TETRIS_ACTIONS, TETRIS_MODES, SKILL_LEN, film_tetris,
                                     read_tetris_clips, clip_truth, board_windows, tetris_modes, BoardCNN,
                                     fit_classifier, predict, train_trex, predict_reward, segment_returns, train_lam,
                                     latent_codes, code_stats, fit_adapter, action_chunks, train_skills, skill_table)


several = lambda *v: field(default_factory=lambda: list(v))   # a list field's default

@dataclass
class WatchingBench:
    "The watching bench's settings."
    genomes: Annotated[list[str], 'bot styles (30_sessions) filmed; the first is cloned'] = several('puffer_greedy', 'farmer')
    seeds: Annotated[list[int], 'one filmed game per genome and seed'] = several(*range(1, 9))
    steps: Annotated[int, 'actions per filmed game'] = 400
    snakes: Annotated[int, 'snakes per filmed map'] = 8
    food: Annotated[int, 'food per filmed map'] = 60
    width: Annotated[int, 'map width'] = 48
    height: Annotated[int, 'map height'] = 32
    crf: Annotated[int, "libx264's constant rate factor of the clips"] = 23
    label_frac: Annotated[float, 'fraction of the clips that keep their true actions'] = 0.1
    idm_epochs: Annotated[int, 'epochs of the snake IDM'] = 10
    clone_epochs: Annotated[int, 'epochs of each clone'] = 10
    eval_seeds: Annotated[list[int], 'evaluation maps, never filmed'] = several(*range(100, 116))
    max_steps: Annotated[int, 'step cap of the first-episode evaluation'] = 20_000
    window: Annotated[list[int], 'START STOP: continuous play counts every death at steps START < t <= STOP (0 0: first '
                                 'episodes only)'] = several(1000, 3000)
    tetris_seeds: Annotated[list[int], 'one filmed tetris game each'] = several(1, 2, 3, 4)
    tetris_test_games: Annotated[int, 'the last games: held out for reward and latents'] = 1
    tetris_steps: Annotated[int, 'ticks per tetris clip'] = 400
    noise: Annotated[list[float], "one tetris board per value: the chance a key is random (the reward model's only "
                                  "ranking)"] = several(0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
    tetris_epochs: Annotated[int, 'epochs of the tetris IDMs'] = 20
    trex_pairs: Annotated[int, 'segment pairs each T-REX reward model learns from'] = 1000
    trex_models: Annotated[int, 'T-REX models (seeds 0..): the reward is their mean'] = 3
    segment: Annotated[int, 'ticks per scored reward segment'] = 50
    latent_codes: Annotated[int, "the latent action model's codes"] = 32
    lam_epochs: Annotated[int, 'epochs of the latent action model'] = 3
    fractions: Annotated[list[float], 'labelled fractions of the adapter curve'] = several(0.01, 0.03, 0.1)
    skill_codes: Annotated[list[int], "the skill VQ-VAE's code counts"] = several(4, 16, 64, 256)
    skill_epochs: Annotated[int, 'epochs of each skill model'] = 20
    parts: Annotated[list[str], "what to measure, of snake, tetris and season (tetris always); without snake, the "
                                "snake figures of --json are kept"] = several('snake', 'tetris', 'season')
    season_games: Annotated[int, "games the season's `videos` producer films"] = 2
    season_steps: Annotated[int, "steps per filmed game and per season snake game"] = 200
    threads: Annotated[int, 'torch threads'] = 1
    json: Annotated[str, 'also write the figures to this file (nbs/measured/watching.json)'] = ''

    def __post_init__(self):
        if both := sorted(set(self.eval_seeds) & set(self.seeds)): raise ValueError(f"--eval-seeds {both} were filmed")
        if not 0 < self.label_frac <= 1: raise ValueError("--label-frac must lie in (0, 1]")
        if len(self.window) != 2: raise ValueError(f"--window takes START STOP, not {self.window}")
        if bad := set(self.parts) - {'snake', 'tetris', 'season'}: raise ValueError(f"--parts {sorted(bad)}: choose from snake, tetris, season")


def snake_figures(a, root)->dict: # the snake keys of the figures file, with their seconds
    "Film snake, the snake IDM and the video clone against the true-action clone (the figures before issue 32's rest)."
    cfg = ClipConfig(width=a.width, height=a.height, num_snakes=a.snakes, num_food=a.food, steps=a.steps, crf=a.crf)
    t0 = time.perf_counter()
    index = film(root, a.genomes, a.seeds, cfg, a.label_frac)
    t_film = time.perf_counter() - t0
    truth = {s.id: s for s in load_sessions(f'{root}/sessions')}
    lab, held = index[index.labelled], index[~index.labelled]
    t0 = time.perf_counter()
    idm, hist = train_idm(clip_dataset(root, lab, augment=True), epochs=a.idm_epochs)
    t_idm = time.perf_counter() - t0
    rows, seqs = [], {}
    for r in held.itertuples():
        tj = video_to_trajectory(decode_clip(f'{root}/{r.path}'), idm, r.scale)
        s = truth[r.session]
        view_ok = (tj['obs'] == s.obs().reshape(-1, SNAKE_CELLS)).all(1)
        rows.append(pd.DataFrame(dict(genome=r.genome, clip=r.clip, true=s.frame.action.to_numpy(), idm=tj['action'],
                                      mode=failure_modes(s, view_ok), view_ok=view_ok)))
        seqs[r.clip] = (torch.from_numpy(tj['obs']), torch.from_numpy(tj['action']), r.clip)
    steps = pd.concat(rows, ignore_index=True); steps['right'] = steps.true == steps.idm
    acc = steps.groupby('genome').right.mean()
    conf = pd.crosstab(steps.true, steps.idm)
    modes = steps.groupby('mode').right.agg(['size', 'mean']).reindex(FAILURE_MODES).fillna(0)
    print(f"clips {len(index)} ({len(lab)} labelled, {len(lab) / len(index):.3f}); {cfg}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(hist.round(4).to_string(index=False))
    print(f"IDM held-out accuracy: overall {steps.right.mean():.4f} (n={len(steps)}); "
          f"per genome {acc.round(4).to_dict()}")
    print(f"views read from the video equal to the true observations: {steps.view_ok.mean():.4f} of steps")
    print("confusion (rows true, columns IDM):\n" + conf.to_string())
    print("failure modes:\n" + modes.rename(columns={'mean': 'accuracy'}).to_string())
    first = held[held.genome == a.genomes[0]]
    ccfg = CloneConfig(epochs=a.clone_epochs)
    t0 = time.perf_counter()
    video_clone, vh = clone_sequences([seqs[c] for c in first['clip']], ccfg)
    true_clone, th = clone_sequences(session_sequences([truth[s] for s in first.session]), ccfg)
    t_clone = time.perf_counter() - t0
    kw = dict(width=a.width, height=a.height, num_snakes=a.snakes, num_food=a.food)
    t0 = time.perf_counter()
    scores = compare_scores(video_clone, true_clone, seeds=a.eval_seeds, max_steps=a.max_steps,
                            window=tuple(a.window) if a.window[1] else None, **kw)
    t_eval = time.perf_counter() - t0
    scores = scores.rename(index={'teacher': 'true-action clone', 'clone': 'video clone'})
    for (protocol, who), r in scores.iterrows():
        print(f"{protocol} {who}: score {r['mean']:.2f} ± {r['std']:.2f} (n={int(r['n'])}, "
              f"censored={int(r['censored'])}, s.e. between maps {r['map_sem']:.2f})")
    for protocol, r in scores.attrs['ratio'].items():
        print(f"video clone / true-action clone ({protocol}): {r:.3f} "
              f"(s.e. between maps {scores.attrs['ratio_sem'][protocol]:.3f})")
    ratio, ratio_sem = scores.attrs['ratio']['first episodes'], scores.attrs['ratio_sem']['first episodes']
    print(f"clone validation accuracy (last epoch): video {vh['val/charts/accuracy'].iloc[-1]:.4f}, "
          f"true {th['val/charts/accuracy'].iloc[-1]:.4f}")
    return dict(clips=asdict(cfg), genomes=a.genomes, seeds=a.seeds, n_clips=len(index), n_labelled=len(lab),
                idm_accuracy={'snake': float(steps.right.mean())}, idm_accuracy_per_genome=acc.to_dict(),
                idm_n=len(steps), labelled_fraction=len(lab) / len(index), view_accuracy=float(steps.view_ok.mean()),
                confusion=conf.to_dict(),
                failure_modes=modes.rename(columns={'mean': 'accuracy'}).to_dict(orient='index'),
                idm_history=hist.to_dict(orient='records'), clone_config=asdict(ccfg), eval_seeds=a.eval_seeds,
                max_steps=a.max_steps, window=a.window, video_clone_ratio=ratio, video_clone_ratio_sem=ratio_sem,
                ratios=scores.attrs['ratio'], ratios_sem=scores.attrs['ratio_sem'],
                baseline='clone of the true actions of the same clips\' snakes (same games, same CloneConfig)',
                scores=[dict(protocol=p, policy=w, **r) for (p, w), r in scores.to_dict(orient='index').items()],
                seconds=dict(film=t_film, idm=t_idm, clones=t_clone, evaluate=t_eval))


SNAKE_KEYS = ('clips', 'genomes', 'seeds', 'n_clips', 'n_labelled', 'idm_accuracy_per_genome', 'idm_n', 'view_accuracy',
              'confusion', 'failure_modes', 'idm_history', 'clone_config', 'eval_seeds', 'max_steps', 'window',
              'video_clone_ratio', 'video_clone_ratio_sem', 'ratios', 'ratios_sem', 'baseline', 'scores')


def main(argv=None):
    a = parse(WatchingBench, doc=__doc__, argv=argv)
    torch.set_num_threads(a.threads)
    old = read_figures(a.json) if a.json else {}
    if 'snake' in a.parts: snake = snake_figures(a, tempfile.mkdtemp())
    elif not old: sys.exit("--parts without snake keeps the snake figures of --json, which does not exist")
    else: snake = {k: old[k] for k in SNAKE_KEYS} | dict(idm_accuracy={'snake': old['idm_accuracy']['snake']},
              labelled_fraction=old['labelled_fraction'], seconds={k: old['seconds'][k] for k in
                                                                   ('film', 'idm', 'clones', 'evaluate')})
    tet = tetris_figures(a, tempfile.mkdtemp())
    if 'season' in a.parts: tet['season'], tet['seconds']['season'] = season_figures(a, tempfile.mkdtemp())
    secs = snake.pop('seconds') | tet.pop('seconds')
    print('seconds: ' + ', '.join(f'{k} {v:.1f}' for k, v in secs.items()))
    if a.json:
        kept = [] if 'snake' in a.parts else (  # where the kept figures were measured, through earlier keeps
            old.get('kept') or [f"snake figures kept from {old['finished']} ({old['command']})"])
        snake['idm_accuracy']['tetris'] = tet.pop('idm_accuracy_tetris')
        snake['labelled_fraction'] = max(snake['labelled_fraction'], tet['tetris']['labelled_fraction'])
        out = dict(command=shlex.join(['python', 'bench/watching.py', *(sys.argv[1:] if argv is None else argv)]),
                   finished=datetime.now(timezone.utc).isoformat(timespec='seconds'), torch_threads=a.threads,
                   load_average=os.getloadavg()[0], kept=kept, **snake, **tet, seconds=secs)
        atomic_write_json(a.json, out)
    return 0


def tetris_figures(a, root):
    "Film tetris, then the tetris IDM, the T-REX reward, the latent action adapter curve and the skill table."
    cfg = TetrisClipConfig(boards=len(a.noise), steps=a.tetris_steps)
    train_seeds, test_seeds = a.tetris_seeds[:-a.tetris_test_games], a.tetris_seeds[-a.tetris_test_games:]
    keys = [(s, b) for s in train_seeds for b in range(cfg.boards)]
    n_lab = max(1, int(a.label_frac * len(a.tetris_seeds) * cfg.boards))
    chosen = {keys[k] for k in np.random.default_rng(0).choice(len(keys), n_lab, replace=False)}
    t0 = time.perf_counter()
    index = pd.concat([film_tetris(root, s, cfg, a.noise, [b for b in range(cfg.boards) if (s, b) in chosen])
                       for s in a.tetris_seeds], ignore_index=True)
    boards = read_tetris_clips(root, index)
    t_film = time.perf_counter() - t0
    truth = {c: clip_truth(root, c, labels=False) for c in index['clip']}
    win = {c: board_windows(boards[c]) for c in index['clip']}
    decoded = float(np.mean([(boards[c] == truth[c]['board']).all((1, 2)).mean() for c in index['clip']]))
    lab, held = index[index.labelled], index[~index.labelled]
    t0 = time.perf_counter()
    torch.manual_seed(0); idm = BoardCNN()  # its initial weights too come from a seeded generator
    hist = fit_classifier(idm, torch.cat([win[c] for c in lab['clip']]),
                          torch.cat([torch.as_tensor(clip_truth(root, c)['action']) for c in lab['clip']]),
                          epochs=a.tetris_epochs)
    t_idm = time.perf_counter() - t0
    steps = pd.concat([pd.DataFrame(dict(clip=c, noise=n, true=truth[c]['action'], idm=predict(idm, win[c]),
                                         mode=tetris_modes(truth[c]))) for c, n in zip(held['clip'], held['noise'])],
                      ignore_index=True)
    steps['right'] = steps.true == steps.idm
    conf = pd.crosstab(steps.true, steps.idm).reindex(index=range(7), columns=range(7), fill_value=0)
    modes = steps.groupby('mode').right.agg(['size', 'mean']).reindex(TETRIS_MODES).fillna(0)
    print(f"tetris: clips {len(index)} ({len(lab)} labelled, {len(lab) / len(index):.3f}); {cfg}; boards decoded "
          f"exactly in {decoded:.4f} of frames")
    print(hist.round(4).to_string(index=False))
    print(f"tetris IDM held-out accuracy {steps.right.mean():.4f} (n={len(steps)})")
    print("confusion (rows true, columns IDM; keys " + ', '.join(TETRIS_ACTIONS) + "):\n" + conf.to_string())
    print("failure modes:\n" + modes.rename(columns={'mean': 'accuracy'}).to_string())
    # reward from video: T-REX on the training games' clips ranked by noise only; calibrated on the labelled clips
    t0 = time.perf_counter()
    train = index[index.seed.isin(train_seeds)]; test = index[index.seed.isin(test_seeds)]
    rwin = {c: board_windows(boards[c], history=0) for c in index['clip']}
    nets = [train_trex([rwin[c] for c in train['clip']], list(-train.noise), pairs=a.trex_pairs, length=a.segment,
                       seed=k) for k in range(a.trex_models)]
    rhist = nets[0][1]
    members = lambda c: np.stack([predict_reward(n, rwin[c]) for n, _ in nets])  # (models, T)
    reward = lambda c: members(c).mean(0)  # the ensemble's per-step reward (T-REX averages an ensemble too)
    seg = lambda c, r: segment_returns(r, a.segment)
    fit_x = np.concatenate([seg(c, reward(c)) for c in lab['clip']])
    fit_y = np.concatenate([seg(c, clip_truth(root, c)['reward']) for c in lab['clip']])
    scale, offset = np.polyfit(fit_x, fit_y, 1)
    px = np.concatenate([seg(c, reward(c)) for c in test['clip']])
    py = np.concatenate([seg(c, truth[c]['reward']) for c in test['clip']])
    per_model = [float(spearmanr(np.concatenate([seg(c, members(c)[k]) for c in test['clip']]), py).statistic)
                 for k in range(a.trex_models)]
    clip_px = [reward(c).sum() for c in test['clip']]
    clip_py = [truth[c]['reward'].sum() for c in test['clip']]
    rho, rho_clip = spearmanr(px, py).statistic, spearmanr(clip_px, clip_py).statistic
    pred = scale * px + offset
    r2 = 1 - ((py - pred)**2).sum() / ((py - py.mean())**2).sum()
    t_reward = time.perf_counter() - t0
    print(f"reward from video (T-REX, noise-ranked, {a.trex_models} x {a.trex_pairs} pairs): Spearman on held-out "
          f"{a.segment}-step segments {rho:.4f} (n={len(px)}; each model {np.round(per_model, 4).tolist()}), "
          f"on whole held-out clips {rho_clip:.4f} (n={len(clip_px)}); "
          f"calibration on the labelled clips: true = {scale:.4f} x predicted + {offset:.4f}, held-out R^2 {r2:.4f}")
    # latent actions: LAM on the training games' transitions (no labels), adapter vs IDM on labelled fractions
    t0 = time.perf_counter()
    X = torch.cat([win[c] for c in train['clip']]); Y = np.concatenate([truth[c]['action'] for c in train['clip']])
    Xt = torch.cat([win[c] for c in test['clip']]); Yt = np.concatenate([truth[c]['action'] for c in test['clip']])
    lam, lhist = train_lam(X, a.latent_codes, a.lam_epochs)
    C, Ct = latent_codes(lam, X), latent_codes(lam, Xt)
    curve, idm_curve, rng = {}, {}, np.random.default_rng(1)
    for f in a.fractions:
        pick = rng.choice(len(Y), max(2, int(f * len(Y))), replace=False)
        adapter = fit_adapter(C[pick], Y[pick], a.latent_codes)
        curve[str(f)] = float((adapter.predict(np.eye(a.latent_codes)[Ct]) == Yt).mean())
        torch.manual_seed(0); m = BoardCNN()
        fit_classifier(m, X[pick], torch.as_tensor(Y[pick]), epochs=a.tetris_epochs)
        idm_curve[str(f)] = float((predict(m, Xt) == Yt).mean())
    t_latent = time.perf_counter() - t0
    codes = code_stats(Ct, a.latent_codes)
    print(f"latent actions ({a.latent_codes} codes; held-out usage {codes['usage']:.3f}, perplexity "
          f"{codes['perplexity']:.2f}): adapter accuracy {curve}; IDM on the same labels {idm_curve} (n={len(Yt)})")
    # skill tokens over the IDM's labels of the training games, scored on the test games' IDM labels
    t0 = time.perf_counter()
    A = torch.cat([action_chunks(predict(idm, win[c])) for c in train['clip']])
    At = torch.cat([action_chunks(predict(idm, win[c])) for c in test['clip']])
    skills = skill_table({k: train_skills(A, k, a.skill_epochs) for k in a.skill_codes}, At)
    t_skills = time.perf_counter() - t0
    print("skill tokens (SkillVQVAE over %d-step IDM-labelled action chunks, held-out):\n" % SKILL_LEN
          + skills.round(4).to_string(index=False))
    secs = dict(tetris_film=t_film, tetris_idm=t_idm, reward=t_reward, latent=t_latent, skills=t_skills)
    return dict(tetris=dict(clips=asdict(cfg), noise=a.noise, seeds=a.tetris_seeds, test_seeds=test_seeds,
                            n_clips=len(index), n_labelled=len(lab), labelled_fraction=len(lab) / len(index),
                            decoded_exactly=decoded, idm_n=len(steps), actions=list(TETRIS_ACTIONS),
                            confusion=conf.to_dict(), failure_modes=modes.rename(columns={'mean': 'accuracy'})
                            .to_dict(orient='index'), idm_history=hist.to_dict(orient='records'),
                            idm_accuracy_per_noise=steps.groupby('noise').right.mean().to_dict()),
                idm_accuracy_tetris=float(steps.right.mean()),
                reward_spearman=float(rho),
                reward=dict(method='T-REX pairwise ranking of segments, ranks from the noise of the clip (D-REX)',
                            pairs=a.trex_pairs, models=a.trex_models, segment=a.segment,
                            spearman_segments=float(rho), spearman_per_model=per_model,
                            spearman_clips=float(rho_clip), n_segments=len(px), n_clips=len(clip_px),
                            scale=float(scale), offset=float(offset), r2_heldout=float(r2),
                            calibrated_on='the labelled clips\' true rewards', heldout_seeds=test_seeds,
                            predicted=px.tolist(), true=py.tolist(), history=rhist.to_dict(orient='records')),
                adapter_curve=curve,
                latent=dict(codes=a.latent_codes, epochs=a.lam_epochs, heldout_usage=codes['usage'],
                            heldout_perplexity=codes['perplexity'], idm_curve=idm_curve, n_test=len(Yt),
                            n_train=len(Y), history=lhist.to_dict(orient='records')),
                skills=skills.to_dict(orient='records'), seconds=secs)



def season_figures(a, root)->tuple: # (figures, seconds)
    """One season on a temporary registry of the snake founders with `videos` as its producer: the video clone is
    filmed, labelled by its IDM, cloned, offered and plays the season's snake tournament."""
    t0 = time.perf_counter()
    reg = Registry(root)
    for name, gid in seed_founders(reg).items():
        if reg.genome(gid)['arena'] != 'snake': reg.set_status(gid, 'retired')
    cfg = SeasonConfig(producers='videos', max_meetings=4, arena_settings=dict(snake=dict(
                           steps=a.season_steps, agents=4, width=a.width, height=a.height, num_food=a.food)),
                       producer_settings=dict(videos=dict(video_games=a.season_games, video_steps=a.season_steps)))
    row = run_season(reg, cfg, log=lambda m: print(m, flush=True))
    r = reg.ratings_by_season()
    r = r[(r.season == row['id']) & (r.arena == 'snake')].sort_values('ordinal', ascending=False)
    table = [dict(rank=k + 1, name=x.name, ordinal=float(x.ordinal), mu=float(x.mu), sigma=float(x.sigma),
                  status=reg.genome(x.genome)['status'], source=reg.genome(x.genome)['source'])
             for k, x in enumerate(r.itertuples())]
    print("season %d snake ratings:\n" % row['id'] + pd.DataFrame(table).round(3).to_string(index=False))
    clones = [t for t in table if t['source'] == 'video']
    snake = cfg.arena_of('snake')
    return dict(config=dict(producers=cfg.producers, snake_steps=snake.steps, snake_agents=snake.agents,
                            max_meetings=cfg.max_meetings, videos=cfg.producer_settings['videos']),
                season=int(row['id']), snake=table, video_clones=clones, replacements=row['replacements']),\
            time.perf_counter() - t0


if __name__ == '__main__':
    sys.exit(main())
