"""Adjusted Rand index between k-means clusters of bot sessions and the bots' hidden styles.

    python bench/clustering.py                        # 7 bot kinds x 16 sessions x 1000 steps, seeds 0 1 2
    python bench/clustering.py --per-style 2 --steps 100 --seeds 0

Each seed records a fresh map of bots (all seven kinds of `BOT_STYLES` together), computes the session features,
clusters them with k-means (k=5 by default) without the labels, then compares: `ARI families` counts PufferLib's snake
at its three temperatures as one style (five styles), `ARI 7 labels` keeps the seven apart (with k=5 its maximum is
below 1). A baseline in the same process: the ARI of clusters of shuffled features (chance level, about 0).
"""
import sys, tempfile, time
from dataclasses import dataclass, field
from typing import Annotated
import numpy as np
import pandas as pd
import torch
from genome_lab.players.clustering import cluster_sessions, feature_table, style_ari
from genome_lab.players.sessions import BOT_STYLES, load_sessions, record_bot_sessions
from kit import parse

@dataclass
class ClusteringBench:
    "The clustering bench's settings."
    per_style: Annotated[int, 'recorded sessions per bot style'] = 16
    steps: Annotated[int, 'steps per session'] = 1000
    seeds: Annotated[list[int], 'seeds of the recordings and clusterings'] = field(default_factory=lambda: [0, 1, 2])
    k: Annotated[int, 'clusters'] = 5


def main(argv=None):
    a = parse(ClusteringBench, doc=__doc__, argv=argv)
    torch.set_num_threads(1)
    rows = []
    for seed in a.seeds:
        t0 = time.perf_counter()
        root = tempfile.mkdtemp()
        sessions = load_sessions(root, record_bot_sessions(root, list(BOT_STYLES), per_style=a.per_style, steps=a.steps,
                                                           seed=seed, progress=False))
        X = feature_table(sessions)
        truth = pd.Series([s.meta['style'] for s in sessions], index=X.index)
        cl = cluster_sessions(X, k=a.k, seed=seed)
        shuffled = X.apply(lambda c: np.random.default_rng(seed).permutation(c.values))
        base = cluster_sessions(shuffled.set_axis(X.index), k=a.k, seed=seed)
        rows.append(dict(seed=seed, sessions=len(sessions), ari_families=style_ari(cl, truth),
                         ari_7_labels=style_ari(cl, truth, family=False), ari_shuffled_baseline=style_ari(base, truth),
                         names=' '.join(sorted(cl.names)), seconds=round(time.perf_counter() - t0, 1)))
        print(pd.crosstab(truth, cl.named).to_string(), flush=True)
    df = pd.DataFrame(rows)
    print(df.to_string(index=False))
    for c in ('ari_families', 'ari_7_labels', 'ari_shuffled_baseline'):
        print(f"{c}: {df[c].mean():.3f} ± {df[c].std(ddof=1) if len(df) > 1 else float('nan'):.3f} (n={len(df)} seeds)")
    return 0


if __name__ == '__main__':
    sys.exit(main())
