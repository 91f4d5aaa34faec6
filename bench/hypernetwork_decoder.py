"""The decoder of the replicator's design (DESIGN's replicator + hypernetwork) on the snake arena: the transformer
denoiser against the per-token MLP on full-size policies, 100 genomes decoded, and a fitness protocol whose
test-retest reliability is measured, with the surrogate chosen by measurement (issue 38).

1. Data: `--data` full-size snake policies on the teacher lines of `teacher_lines` (41_hypernetwork: from untrained
   policies to PufferLib's snake or the GPU fine-tune of bench/gpu_snake.py, the genome's z_0 the teacher's share, the
   sign of z_1 the teacher). Both backbones (`HypernetConfig.backbone`) are pretrained by `pretrain_decoder` on the
   same data, batches and steps (the transformer at these settings is the loop's decoder, `pretrained_decoder`);
   the held-out denoising loss (on `--held-out` policies never trained on) is printed for both.
2. `--genomes` new genomes (N(0, I), never in the data) are decoded by each backbone (no exploration noise) and played
   greedily on PufferLib's training map (`evaluate`: length at death of each snake's first episode, the same map
   seed for every policy); next to them as many untrained PufferLib initialisations, uniform random moves and the
   teachers.
3. Fitness reliability: the same decoded genomes' training fitness (`evaluate_population`) measured twice per protocol:
   'as trained' (each genome developed anew with the last step's exploration noise, one game on the generation's map,
   as `ReplicatorTrainingLoop` does) and 'crn' (the genome's noise-free development, `--games` games on map seeds
   shared by every genome, common random numbers); the test-retest correlation r of each. The surrogates (the
   replicator's `FitnessEstimator` ensemble; scikit-learn's `GaussianProcessRegressor` with an ARD RBF kernel plus a
   `WhiteKernel` noise model) are scored by 5-fold held-out R^2 against the measured fitness, next to 0.7 and 0.7 r.
4. Modes: a Gaussian mixture (scikit-learn, components chosen by BIC) fitted to the genomes of the decoded policies
   that scored in the top third; each component's mean genome is decoded and played (`play` of bench/hypernetwork.py:
   adjacent food taken, what deaths ran into) and its nearest teacher in weights is named: the strategy it stands for.
5. The surrogate's learning curve (`surrogate_study`, 'surrogate'; `--surrogate-genomes 0`: none; `--surrogate-only`: it
   alone, the transformer retrained). `--loop-only`: each `ReplicatorConfig.surrogate`'s held-out R^2 inside
   `ReplicatorTrainingLoop` ('surrogate_in_loop'), the measurement behind the loop's default. `--within-only`: the loop
   fitness's test-retest r among one generation's genomes ('within_generation'), the ceiling of that R^2; with
   `--within-pretrained` from the pretrained transformer ('within_generation_pretrained'). These modes measured the loop
   as it was then (`EARLIER`: the zero-initialised 16-wide decoder trained from fitness, exploration 0.2, `base_lr` 0.1),
   the figures behind today's defaults; the bar's own run (bench/replicator_bar.py) measures today's loop.
Writes --out (nbs/measured/hypernetwork_decoder.json). Usage: python bench/hypernetwork_decoder.py [--train-steps 1500] [--genomes 100]
"""
import datetime, json, os, sys, time
from dataclasses import dataclass, asdict, replace
from pathlib import Path
from typing import Annotated
import numpy as np
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel, ConstantKernel
from sklearn.model_selection import KFold
from sklearn.linear_model import RidgeCV
from sklearn.decomposition import PCA
from sklearn.mixture import GaussianMixture as SkMixture
from genome_lab.core import atomic_write_json, measured_dir, machine
from kit import parse, read_figures, write_figures
from genome_lab.evolution.hypernetwork import (DiffusionHypernetwork, HypernetConfig, init_policy, policy_config,
                                     evaluate_population, HypernetworkTrainer, TrainerConfig, probe_views,
                                     probe_actions, PretrainConfig, teachers, teacher_lines, pretrain_decoder,
                                     pretrained_decoder, policy_distance_ratio)
from genome_lab.evolution.replicator_run import ReplicatorConfig, ReplicatorTrainingLoop, SURROGATES
from genome_lab.arenas.policies import load_pufferlib_policy, RandomPolicy
from genome_lab.arenas.evaluation import evaluate
from genome_lab.arenas.arena import SnakeArena
from genome_lab.evolution.replicator import FitnessEstimator
sys.path.insert(0, str(Path(__file__).parent))
from hypernetwork import play

@dataclass
class Options:
    "The bench's settings."
    data: Annotated[int, 'policies the hypernetworks learn from'] = 64
    held_out: Annotated[int, 'policies of the held-out denoising loss'] = 16
    train_steps: Annotated[int, 'Adam steps of each backbone'] = 200
    batch: Annotated[int, 'policies per step'] = 8
    lr: Annotated[float, "Adam's learning rate"] = 1e-3
    width: Annotated[int, 'denoiser width'] = 128
    chunk: Annotated[int, 'numbers per token'] = 1024
    scale: Annotated[float, "the generated numbers' unit"] = 0.1
    genomes: Annotated[int, 'new genomes decoded by each backbone'] = 100
    snakes: Annotated[int, 'snakes per policy in the score games'] = 16
    max_steps: Annotated[int, 'step cap of the score games'] = 3000
    games: Annotated[int, "games per genome of the 'crn' fitness protocol"] = 4
    fitness_steps: Annotated[int, 'steps of a fitness game'] = 1024
    seed: Annotated[int, 'seeds data, training and genomes'] = 0
    surrogate_genomes: Annotated[int, "new genomes beside the --genomes ones in the surrogates' fitness data (0: no surrogate study)"] = 300
    surrogate_only: Annotated[bool, "retrain the transformer as --out's run did and redo only the surrogate study (a full run does it too)?"] = False
    baseline_only: Annotated[bool, "redo only the untrained initialisations' window fitness in --out (a full run does it too)?"] = False
    loop_generations: Annotated[int, "with --loop-only: generations of each surrogate's replicator run"] = 30
    loop_steps: Annotated[int, "with --loop-only: arena steps per generation of those runs"] = 512
    loop_only: Annotated[bool, "add only the surrogates' held-out R^2 inside `ReplicatorTrainingLoop` ('probe' against 'genome') to --out?"] = False
    within_only: Annotated[bool, "add only the loop fitness's within-generation reliability ('within_generation', --loop-generations of `ReplicatorConfig()`) to --out?"] = False
    within_pretrained: Annotated[bool, "with --within-only: start the loop's decoder from the transformer this bench trains (--data, --train-steps, ...) at PufferLib's size, genome-conditioned from the start ('within_generation_pretrained')?"] = False
    device: Annotated[str, "torch device of the denoisers' training ('cpu', 'cuda'); decoding and games run on the CPU"] = 'cpu'
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'hypernetwork_decoder.json')

EARLIER = dict(hypernet=HypernetConfig(hidden=16, chunk=256, exploration=0.2), trainer=TrainerConfig(lr=3e-4, base_lr=0.1),
               pretrain=PretrainConfig(pretrain_steps=0))   # the loop's defaults when its within-generation figures were measured

def pretraining(o:Options)->PretrainConfig: return PretrainConfig(pretrain_steps=o.train_steps, pretrain_data=o.data,
                                                                  pretrain_held_out=o.held_out, pretrain_batch=o.batch, pretrain_lr=o.lr, pretrain_seed=o.seed)

def train(cfg:HypernetConfig, o:Options)->tuple: # (hn on the CPU, record)
    "`pretrain_decoder` with the bench's settings on `o.device` (a CUDA run draws other noise than a CPU run)."
    return pretrain_decoder(cfg, pretraining(o), o.device)

def _policy(sd:dict)->torch.nn.Module: # a teacher's state_dict as a playing policy
    pol = load_pufferlib_policy('snake'); pol.load_state_dict(sd); return pol

def held_out_loss(hn, data, z, repeats:int=8)->float: # mean over fixed noise draws
    g = torch.Generator().manual_seed(999)
    with torch.no_grad(): return float(np.mean([float(hn.denoising_loss(data, z, g)) for _ in range(repeats)]))

def scores(policies:list, o:Options, seed:int=202)->list: # mean length of each snake's first episode per policy, same map seed for all
    """Each snake's length at death, or at the step cap if it is still alive then (right-censored: a lower bound).
    `EvalResult.stats` leaves the censored snakes out, as PufferLib's log does: an untrained policy whose snakes all circle
    without dying had no score (NaN), and one whose few deaths came late was scored above the ones that circle."""
    arena, out = SnakeArena(num_snakes=o.snakes), []
    for p in policies:
        r = evaluate(p, arena, seed=seed, max_steps=o.max_steps, progress=False)
        alive = np.setdiff1d(np.arange(o.snakes), r.episodes.agent)   # censored: their length so far
        out.append(float(np.concatenate([r.episodes.score, arena.running().score[alive]]).mean()))
    arena.close()
    return out

def spread(x)->dict:
    x = np.asarray(x, float)
    return dict(mean=float(np.mean(x)), std=float(np.std(x)), min=float(np.min(x)), median=float(np.median(x)),
                max=float(np.max(x)), scores=[round(float(v), 3) for v in x])

def fitness(hn:DiffusionHypernetwork, params:dict, seed:int, steps:int, per_map:int=64, each:int=4)->torch.Tensor: # (P,)
    "Training fitness ('window', as `ReplicatorConfig`'s default) of stacked policies, `per_map` policies x `each` snakes per map."
    P, out = len(params['h0']), []
    arena = SnakeArena(width=640, height=360, num_snakes=per_map * each, num_food=4096, reward_food=0.1, reward_corpse=0.1,
                       reward_death=-1.0)
    for a in range(0, P, per_map):
        part = {k: v[a:a + per_map] for k, v in params.items()}
        n = len(part['h0'])
        if n < per_map: part = {k: v[torch.arange(per_map) % n] for k, v in part.items()}   # fill the map
        out.append(evaluate_population(hn.policy_config, part, arena, steps, seed=seed, fitness='window')['fitness'][:n])
    arena.close()
    return torch.cat(out)

def protocols(hn:DiffusionHypernetwork, genomes:torch.Tensor, o:Options)->dict: # {protocol: (test (P,), retest (P,))}
    g = torch.Generator().manual_seed(o.seed + 7)
    tr = HypernetworkTrainer(hn, TrainerConfig())
    trained = lambda s: fitness(hn, tr.develop(genomes, g)['params'], s, o.fitness_steps).view(2, -1).mean(0)   # mirrored pair
    mean = hn.generate_weights(genomes, torch.Generator().manual_seed(0), final_noise=False)
    crn = lambda seeds: torch.stack([fitness(hn, mean, s, o.fitness_steps) for s in seeds]).mean(0)
    return {'as trained': (trained(11), trained(12)),
            'crn': (crn([1000 + k for k in range(o.games)]), crn([2000 + k for k in range(o.games)]))}

def init_window(o:Options)->dict: # the untrained initialisations' training fitness under the 'crn' protocol's test seeds
    "Most untrained policies circle without dying (their length at death is censored), so they are compared by fitness."
    hn = DiffusionHypernetwork(HypernetConfig(hidden=128, chunk=o.chunk, width=o.width, scale=o.scale, backbone='mlp'))
    sds = [init_policy(policy_config(128), seed=7 + i).state_dict() for i in range(o.genomes)]
    params = {k: torch.stack([sd[k] for sd in sds]) for k in sds[0]}
    f = torch.stack([fitness(hn, params, s, o.fitness_steps) for s in [1000 + k for k in range(o.games)]]).mean(0)
    return spread(f.numpy())

def r2(y, p)->float: return float(1 - ((y - p) ** 2).sum() / ((y - y.mean()) ** 2).sum())

def surrogates(X:np.ndarray, y:np.ndarray, seed:int)->dict: # {name: 5-fold held-out R^2}
    pred = {k: np.zeros_like(y) for k in ('ensemble (FitnessEstimator)', 'GP (RBF ARD + WhiteKernel)')}
    for tr, te in KFold(5, shuffle=True, random_state=seed).split(X):
        est = FitnessEstimator(X.shape[1], seed=seed)
        est.add(torch.tensor(X[tr]), torch.tensor(y[tr])); est.fit(epochs=100, holdout=0)
        pred['ensemble (FitnessEstimator)'][te] = est.predict(torch.tensor(X[te]))[0].numpy()
        k = ConstantKernel(1.0) * RBF(np.ones(X.shape[1]), (1e-2, 1e3)) + WhiteKernel(0.1, (1e-5, 10))
        gp = GaussianProcessRegressor(k, normalize_y=True, n_restarts_optimizer=2, random_state=seed).fit(X[tr], y[tr])
        pred['GP (RBF ARD + WhiteKernel)'][te] = gp.predict(X[te])
    return {k: r2(y, p) for k, p in pred.items()}

def surrogate_models(noise:np.ndarray, y:np.ndarray)->dict: # {name: (features 'genome' or 'probe', make(train_index) -> regressor)}
    "The surrogates compared by held-out R^2; `noise` (P,) is each genome's measured variance of its fitness mean `y` (P,)."
    gp = lambda alpha=1e-10: GaussianProcessRegressor(ConstantKernel(1.0) * RBF(np.ones(16), (1e-2, 1e3)) + WhiteKernel(0.1, (1e-5, 10)),
                                                      normalize_y=True, n_restarts_optimizer=2, random_state=0, alpha=alpha)
    class Ensemble: # the replicator's `FitnessEstimator` as a regressor
        def fit(self, X, y):
            self.e = FitnessEstimator(X.shape[1], seed=0); self.e.add(torch.tensor(X), torch.tensor(y)); self.e.fit(epochs=100, holdout=0); return self
        def predict(self, X): return self.e.predict(torch.tensor(X))[0].numpy()
    class ProbeGP: # a GP on the probe actions' first `k` principal components
        def __init__(self, k:int): self.k = k
        def fit(self, X, y):
            self.pca = PCA(self.k, random_state=0).fit(X)
            self.gp = GaussianProcessRegressor(ConstantKernel(1.0) * RBF(np.ones(self.k), (1e-2, 1e3)) + WhiteKernel(0.1, (1e-5, 10)),
                                               normalize_y=True, n_restarts_optimizer=2, random_state=0).fit(self.pca.transform(X), y); return self
        def predict(self, X): return self.gp.predict(self.pca.transform(X))
    ridge = lambda: RidgeCV(alphas=np.logspace(-3, 4, 30))
    return {'ensemble (FitnessEstimator)': ('genome', lambda tr: Ensemble()),
            'GP (RBF ARD + WhiteKernel)': ('genome', lambda tr: gp()),
            'GP, heteroscedastic (per-genome noise + WhiteKernel)': ('genome', lambda tr: gp(noise[tr] / y[tr].var())),   # alpha in `normalize_y`'s units
            'ridge (genome)': ('genome', lambda tr: ridge()),
            'ridge (probe actions)': ('probe', lambda tr: ridge()),
            'GP (probe actions, 8 principal components)': ('probe', lambda tr: ProbeGP(8)),
            'GP (probe actions, 16 principal components)': ('probe', lambda tr: ProbeGP(16))}

def held_out_r2(feats:dict, y:np.ndarray, noise:np.ndarray, n:int, repeats:int=3)->dict: # {model: mean 5-fold R^2 over repeats}
    "5-fold held-out R^2 of every surrogate on the first `n` genomes, averaged over `repeats` fold splits."
    out = {}
    for name, (kind, make) in surrogate_models(noise[:n], y[:n]).items():
        X, r = feats[kind][:n], []
        for rep in range(repeats):
            pred = np.zeros(n)
            for tr, te in KFold(5, shuffle=True, random_state=rep).split(X): pred[te] = make(tr).fit(X[tr], y[tr]).predict(X[te])
            r.append(r2(y[:n], pred))
        out[name] = float(np.mean(r))
    return out

def transformer_data(o:Options)->tuple: # (HypernetConfig, tokens (data + held_out, L, C), genomes (data + held_out, 16))
    "The full run's transformer settings and its data (`teacher_lines`: --data training policies, then --held-out ones)."
    cfg = HypernetConfig(hidden=128, chunk=o.chunk, width=o.width, scale=o.scale, backbone='transformer')
    data, z = teacher_lines(DiffusionHypernetwork(replace(cfg, backbone='mlp')), o.data + o.held_out, o.seed, teachers())
    return cfg, data, z

def surrogate_study(o:Options, hn:DiffusionHypernetwork|None=None)->dict:
    """The surrogate's learning curve: the transformer `hn` of the full run (None: retrained as it is, same data, steps
    and seed), the 'crn' fitness (test and retest seeds) of its --genomes genomes and --surrogate-genomes more, every
    surrogate's held-out R^2 at growing numbers of genomes against 0.7 and 0.7 r."""
    cfg, data, z = transformer_data(o)
    hn = hn or train(cfg, o)[0]
    ho = held_out_loss(hn, data[o.data:], z[o.data:])
    print(f"transformer: held-out loss {ho:.6f}", flush=True)
    genomes = torch.cat([torch.randn(o.genomes, 16, generator=torch.Generator().manual_seed(o.seed + 12345)),
                         torch.randn(o.surrogate_genomes, 16, generator=torch.Generator().manual_seed(o.seed + 54321))])
    views, games, probe = probe_views(), {}, []
    for a in range(0, len(genomes), 100):
        params = hn.generate_weights(genomes[a:a + 100], torch.Generator().manual_seed(0), final_noise=False)
        probe.append(probe_actions(hn, params, views).numpy())
        for name, base in (('test', 1000), ('retest', 2000)):
            games.setdefault(name, []).append(torch.stack([fitness(hn, params, base + k, o.fitness_steps) for k in range(o.games)]))
        print(f"  {a + len(params['h0'])} genomes measured", flush=True)
    g = {k: torch.cat(v, 1).numpy().astype(np.float64) for k, v in games.items()}   # (games, P)
    y, retest = g['test'].mean(0), g['retest'].mean(0)
    noise = g['test'].var(0, ddof=1) / o.games   # each genome's variance of its measured mean
    r = float(np.corrcoef(y, retest)[0, 1])
    feats = dict(genome=genomes.numpy().astype(np.float64), probe=np.concatenate(probe).astype(np.float64))
    sizes = sorted({o.genomes, (o.genomes + len(y)) // 2, len(y)})
    curve = {n: held_out_r2(feats, y, noise, n) for n in sizes}
    for n, v in curve.items(): print(f"  {n} genomes: held-out R2 " + ', '.join(f"{k} {x:.3f}" for k, x in v.items()), flush=True)
    best = max(curve[len(y)], key=curve[len(y)].get)
    return dict(genomes=len(y), reliability=r, target=0.7, target_reliability=0.7 * r, retrained_held_out_loss=ho,
                r2=curve, chosen=best, chosen_r2=curve[len(y)][best], fitness_std=float(y.std()), test=y.tolist(), retest=retest.tolist())

def stored_checks(sur:dict, res:dict, o:Options)->dict: # `sur` with its agreement with the full run `res`
    "Is the study's hypernetwork the full run's? Its held-out loss, and its first --genomes genomes' 'crn' fitness against the run's."
    print(f"surrogate study: held-out loss {sur['retrained_held_out_loss']:.6f}, the full run's {res['backbones']['transformer']['held_out_loss']:.6f}")
    return sur | dict(first_stored_test_correlation=float(np.corrcoef(sur['test'][:o.genomes], res['protocols']['crn']['test'][:o.genomes])[0, 1]))

def in_loop(o:Options)->dict: # {surrogate: {'r2': per generation, 'mean', 'mean_last_half', 'seconds'}}
    "The held-out R^2 of each `ReplicatorConfig.surrogate` inside the training loop: `ReplicatorConfig()` but for generations, steps and surrogate."
    out = {}
    for s in SURROGATES:
        t0 = time.perf_counter()
        cfg = ReplicatorConfig(generations=o.loop_generations, steps=o.loop_steps, eval_interval=0, surrogate=s, seed=o.seed, **EARLIER)
        loop = ReplicatorTrainingLoop(cfg)
        for _ in range(cfg.generations): loop.step()
        r2 = [h['surrogate/r2'] for h in loop.history]
        out[s] = dict(r2=r2, mean=float(np.nanmean(r2)), mean_last_half=float(np.nanmean(r2[len(r2) // 2:])),
                      trust=[h['surrogate/trust'] for h in loop.history], seconds=time.perf_counter() - t0)
        print(f"surrogate {s!r} in the loop: held-out R2 mean {out[s]['mean']:.3f}, last half {out[s]['mean_last_half']:.3f}; "
              f"{out[s]['seconds']:.0f} s", flush=True)
    return out

def within_generation(o:Options, pretrained:bool=False)->dict: # {'rows': one per measured generation, 'seconds'}
    """Can the loop's surrogate predict anything? Every sixth of `--loop-generations` of a `ReplicatorConfig()` run
    (the bar's settings; its start and end included), one population the loop would draw is played twice on other map
    seeds: the test-retest r of its genomes' fitness (each the mean of its two mirrored policies, one game as in the
    loop) bounds the held-out R^2 any surrogate can reach on it. Beside it, how far apart the genomes' decoded policies
    are: the mean distance between the probe actions of two genomes, over that between a genome's two mirrored ones
    (1/sqrt(2) if the genome adds nothing to its last step's mirrored exploration noise: `policy_distance_ratio`). The
    loop is `EARLIER`'s; `pretrained`: its decoder the pretrained transformer (`pretrained_decoder`, `PretrainConfig()`)
    at exploration 0.2, as when this was measured."""
    t0 = time.perf_counter()
    settings = dict(EARLIER, hypernet=HypernetConfig(exploration=0.2), pretrain=PretrainConfig()) if pretrained else EARLIER
    cfg = ReplicatorConfig(generations=o.loop_generations, eval_interval=0, seed=o.seed, **settings)
    loop, views, rows = ReplicatorTrainingLoop(cfg), probe_views(), []
    for g in range(cfg.generations + 1):
        if g % max(1, cfg.generations // 6) == 0:
            genomes, dev = loop.pm.next(torch.Generator().manual_seed(10_007 + g))
            f = [evaluate_population(loop.pm.hn.policy_config, dev['params'], loop.arena, cfg.steps, seed=900_001 + 2 * g + k,
                                     fitness=cfg.fitness)['fitness'].view(2, -1).mean(0).numpy() for k in (0, 1)]
            pa = probe_actions(loop.pm.hn, dev['params'], views).view(2, len(genomes), -1)
            rows.append(dict(generation=g, r=float(np.corrcoef(*f)[0, 1]), fitness_mean=float(np.mean(f)),
                             fitness_std=float(np.std(f[0])), probe_between_over_within=policy_distance_ratio(pa)))
            print(f"generation {g}: within-generation test-retest r {rows[-1]['r']:.3f}; fitness {rows[-1]['fitness_mean']:.3f} "
                  f"+- {rows[-1]['fitness_std']:.3f}; probe distance between genomes / within a genome "
                  f"{rows[-1]['probe_between_over_within']:.3f}", flush=True)
        if g < cfg.generations: loop.step()
    return dict(rows=rows, loop_r2=[h['surrogate/r2'] for h in loop.history], trust=[h['surrogate/trust'] for h in loop.history],
                steps=cfg.steps, population=cfg.population, seconds=time.perf_counter() - t0)

def modes(hn:DiffusionHypernetwork, genomes:torch.Tensor, sc:list, tch:list, o:Options)->list: # one row per mode
    "The top third's genomes as a mixture (BIC over 1-4 components); each mode's mean genome decoded, scored and played."
    top = genomes[np.argsort(sc)[-len(sc) // 3:]].numpy().astype(np.float64)
    fits = [SkMixture(k, covariance_type='diag', random_state=o.seed).fit(top) for k in range(1, min(4, len(top)) + 1)]
    gm = min(fits, key=lambda m: m.bic(top))
    means = torch.tensor(gm.means_, dtype=torch.float32)
    params = hn.generate_weights(means, torch.Generator().manual_seed(0), final_noise=False)
    rows = []
    for i in range(len(means)):
        pol = hn.policy(params, i)
        dist = {n: float(sum(((pol.state_dict()[k] - t[k]) ** 2).sum() for k in t if not k.startswith('value.')).sqrt()) for n, t in tch}
        rows.append(dict(weight=float(gm.weights_[i]), genome=[round(float(v), 3) for v in means[i]], score=scores([pol], o)[0],
                         nearest_teacher=min(dist, key=dist.get), distance=dist, play=play(pol, snakes=64, steps=1000)))
    return rows

def main():
    o = parse(Options, doc=__doc__)
    torch.set_num_threads(1); t0 = time.perf_counter()
    if o.surrogate_only:   # --out is read at the end: a full run with --surrogate-genomes 0 may write it meanwhile
        sur = surrogate_study(o)
        sur = stored_checks(sur, read_figures(o.out), o)
        print(f"surrogate: reliability r {sur['reliability']:.3f} over {sur['genomes']} genomes; chosen {sur['chosen']!r} with held-out R2 "
              f"{sur['chosen_r2']:.3f} (targets 0.7 and 0.7 r = {sur['target_reliability']:.3f}); {time.perf_counter() - t0:.0f} s")
        write_figures(o.out, dict(surrogate=sur)); return
    if o.loop_only: write_figures(o.out, dict(surrogate_in_loop=in_loop(o))); return
    if o.within_only:
        key = 'within_generation_pretrained' if o.within_pretrained else 'within_generation'
        write_figures(o.out, {key: within_generation(o, o.within_pretrained)}); return
    if o.baseline_only:
        w, crn = init_window(o), np.array(read_figures(o.out)['protocols']['crn']['test'])
        print(f"window fitness ('crn' test seeds): untrained initialisations mean {w['mean']:.3f}, max {w['max']:.3f}; "
              f"decoded genomes mean {crn.mean():.3f}, max {crn.max():.3f}; {time.perf_counter() - t0:.0f} s")
        write_figures(o.out, dict(untrained_init_window=w)); return
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    tch = teachers()
    cfgs = {b: HypernetConfig(hidden=128, chunk=o.chunk, width=o.width, scale=o.scale, backbone=b) for b in ('transformer', 'mlp')}
    probe = DiffusionHypernetwork(cfgs['mlp'])
    data, z = teacher_lines(probe, o.data + o.held_out, o.seed, tch)
    clipped = float((data[:, probe.mask].abs() > probe.cfg.x0_bound).float().mean())
    print(f"data: {o.data} + {o.held_out} held-out policies of {int(probe.mask.sum()):,} numbers in {probe.mask.shape[0]} tokens; "
          f"share beyond x0_bound {clipped:.2e}", flush=True)
    res = dict(options=asdict(o), machine=machine(), date=str(datetime.date.today()), tokens=int(probe.mask.shape[0]),
               generated_numbers=int(probe.mask.sum()), beyond_bound=clipped, backbones={})
    genomes = torch.randn(o.genomes, 16, generator=torch.Generator().manual_seed(o.seed + 12345))
    nets = {}
    for b, cfg in cfgs.items():
        t1 = time.perf_counter()
        hn, rec = train(cfg, o)
        nets[b], ho = hn, rec['held_out_loss']
        params = hn.generate_weights(genomes, torch.Generator().manual_seed(0), final_noise=False)
        sc = scores([hn.policy(params, i) for i in range(o.genomes)], o)
        res['backbones'][b] = dict(parameters=sum(p.numel() for p in hn.parameters()), train_loss_first=rec['loss_first'],
                                   train_loss_last=rec['loss_last'], held_out_loss=ho, train_seconds=rec['seconds'],
                                   decoded=spread(sc), seconds=time.perf_counter() - t1)
        print(f"{b:11s}: {res['backbones'][b]['parameters']:,} parameters; denoising loss {rec['loss_first']:.4f} -> "
              f"{rec['loss_last']:.4f} (train), held-out {ho:.4f}; {o.genomes} decoded genomes' length at death: mean "
              f"{np.mean(sc):.2f}, std {np.std(sc):.2f}, min {np.min(sc):.2f}, max {np.max(sc):.2f}; {time.perf_counter() - t1:.0f} s", flush=True)
    base = scores([init_policy(policy_config(128), seed=7 + i) for i in range(o.genomes)], o)
    rnd = scores([RandomPolicy(4)], o)
    res['untrained_init'], res['random'] = spread(base), spread(rnd)
    res['teachers'] = {n: scores([_policy(t)], o)[0] for n, t in tch}
    print(f"untrained PufferLib initialisations ({o.genomes}): mean {np.mean(base):.2f}, max {np.max(base):.2f}; random moves {rnd[0]:.2f}; "
          f"teachers {res['teachers']}", flush=True)
    hn = nets['transformer']
    res['modes'] = modes(hn, genomes, res['backbones']['transformer']['decoded']['scores'], tch, o)
    for m in res['modes']:
        print(f"mode (weight {m['weight']:.2f}, z0 {m['genome'][0]:.2f}, z1 {m['genome'][1]:.2f}): length at death {m['score']:.2f}; nearest "
              f"teacher {m['nearest_teacher']}; adjacent food {m['play']['adjacent_food']:.3f}; deaths " +
              ', '.join(f"{k} {v:.2f}" for k, v in m['play']['causes'].items()), flush=True)
    prot = protocols(hn, genomes, o)
    res['protocols'] = {}
    for name, (f1, f2) in prot.items():
        r = float(np.corrcoef(f1.numpy(), f2.numpy())[0, 1])
        sur = surrogates(genomes.numpy().astype(np.float64), f1.numpy().astype(np.float64), o.seed)
        res['protocols'][name] = dict(reliability=r, surrogate_r2=sur, target=0.7, target_reliability=0.7 * r,
                                      fitness_std=float(f1.std()), test=f1.tolist(), retest=f2.tolist())
        print(f"protocol {name!r}: test-retest r {r:.3f}; held-out R2 " + ', '.join(f"{k} {v:.3f}" for k, v in sur.items())
              + f" (targets 0.7 and 0.7 r = {0.7 * r:.3f})", flush=True)
    res['untrained_init_window'] = init_window(o)
    if o.surrogate_genomes: res['surrogate'] = stored_checks(surrogate_study(o, hn), res, o)
    res['seconds'] = time.perf_counter() - t0
    atomic_write_json(o.out, res)
    print(f"wrote {o.out}; {res['seconds']:.0f} s")

if __name__ == '__main__': main()
