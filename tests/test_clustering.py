"""Behaviour clustering: features on known sessions, the naming rule, versions of cluster genomes, the ARI bench."""
import json
from dataclasses import replace
import numpy as np
import pandas as pd
import pytest
import torch
from genome_lab.players.cloning import CLONE_PRESETS, contributions
from genome_lab.players.clustering import (FEATURES, session_features, feature_table, cluster_sessions, name_clusters, silhouette_curve,
                                   style_ari, train_cluster_genome, train_cluster_genomes, latest_version)
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.players.sessions import SessionWriter, read_session, load_sessions, record_bot_sessions
from genome_lab.players.clustering import produce_clones, produce_clusters, CloneSettings, ClusterSettings
from genome_lab.core import ProducerContext
from hostile import upload

torch.set_num_threads(1)


def _session(tmp_path, sid, turns, moves, obs, deaths=(), food=()):
    w = SessionWriter(tmp_path, dict(player='human:t', kind='human'), chunk_rows=50, session_id=sid)
    for t, (tu, mv) in enumerate(zip(turns, moves)):
        w.append(obs=obs[t], action=max(mv, 0), move=mv, turn=tu, death=int(t in deaths), food=int(t in food),
                 reward=-1.0 if t in deaths else 0.1 if t in food else 0.0)
    w.close()
    return read_session(tmp_path/sid)


def test_features_on_a_known_session(tmp_path):
    T = 20
    obs = np.zeros((T, 121), np.int8); obs[:, 5*11 + 5] = 4
    obs[:, 5*11 + 9] = 6          # another snake 4 cells to the right of the head
    obs[:, 0:11] = 3              # a wall row 5 cells above
    turns = [-1] + [0]*4 + [1]*10 + [2]*5
    moves = [3]*T                 # always moving right: towards the other snake
    s = _session(tmp_path, 'k', turns, moves, obs.reshape(T, 11, 11), deaths=(9,), food=(3, 4, 5, 6))
    f = session_features(s)
    assert f['left'] == pytest.approx(4/19) and f['straight'] == pytest.approx(10/19) and f['right'] == pytest.approx(5/19)
    assert f['turns_per_s'] == pytest.approx(9/20*10)
    assert f['aggression'] == pytest.approx(1.0)       # every move with a snake in view closes in on it
    assert f['collection'] == pytest.approx(4/20*100)
    assert f['survival'] == pytest.approx(np.log(20/2))
    assert f['threat_distance'] == pytest.approx(4.0)  # the other snake (4) is nearer than the wall (5)
    assert list(feature_table([s]).columns) == list(FEATURES)


def test_naming_rule_is_a_one_to_one_assignment():
    c = pd.DataFrame(0.0, index=range(6), columns=list(FEATURES))
    c.loc[0, 'collection'] = 3; c.loc[1, 'aggression'] = 2; c.loc[2, ['survival', 'threat_distance']] = 1
    c.loc[3, ['survival', 'threat_distance']] = -1; c.loc[4] = 0.05; c.loc[5, 'collection'] = 2.5
    names = name_clusters(c)
    assert names[:5] == ['Farmer', 'Hunter', 'Survivor', 'Aggressive', 'Balanced'] and names[5] == 'Farmer2'


@pytest.fixture(scope='module')
def bots(tmp_path_factory):
    root = tmp_path_factory.mktemp('bots')
    # 1500 steps: with 400, three sessions per style separated (ARI >= 0.8) on only about half of the maps (seeds 0-7)
    ids = record_bot_sessions(root, ['puffer_greedy', 'random', 'hunter'], per_style=3, steps=1500, seed=0, progress=False)
    return load_sessions(root, ids)


def test_clusters_separate_distinct_styles(bots):
    X = feature_table(bots)
    truth = pd.Series([s.meta['style'] for s in bots], index=X.index)
    cl = cluster_sessions(X, k=3, seed=0)
    assert style_ari(cl, truth) >= 0.8
    assert set(silhouette_curve(X, ks=range(2, 5)).index) == {2, 3, 4}
    with pytest.raises(ValueError, match='k must'): cluster_sessions(X, k=1)


def test_cluster_genome_versions(tmp_path, bots):
    reg = Registry(tmp_path/'reg'); seed_founders(reg)
    cfg = replace(CLONE_PRESETS['tiny'], epochs=1, hidden=16)
    row, trained = train_cluster_genome(reg, 'Hunter', bots[:3], cfg)
    assert trained and row['name'] == 'Hunter-cluster1' and row['type'] == 'cluster'
    row2, trained2 = train_cluster_genome(reg, 'Hunter', bots[:3], cfg)
    assert not trained2 and row2['id'] == row['id']
    row3, trained3 = train_cluster_genome(reg, 'Hunter', bots[:4], cfg)
    assert trained3 and row3['name'] == 'Hunter-cluster2' and dict(id=row['id'], relation='cluster') in row3['parents']
    assert {p['id'] for p in row3['parents'] if p['relation'] == 'player'} == {s.player for s in bots[:4]}
    assert latest_version(reg, 'Hunter') == (2, row3['id']) and latest_version(reg, 'Farmer') == (0, None)
    c = contributions(reg)
    assert c['Hunter-cluster2'].sum() == 4 and c['Hunter-cluster1'].sum() == 3


def test_bench_runs_tiny(cli, bench):
    r = cli('--per-style', '2', '--steps', '60', '--seeds', '0', main=bench('clustering').main)
    assert r.returncode == 0, r.stderr
    assert 'ari_families:' in r.stdout and 'ari_shuffled_baseline:' in r.stdout


def test_clones_and_clusters_skip_what_they_cannot_learn_from(tmp_path):
    """Players who left after one step (quitter), or once early beside a real game (bo), cost only that input: ivy and bo
    get clones, quitter is skipped, and each round's report names what was left out and why."""
    with Registry(tmp_path/'reg') as reg:
        upload(reg.root, 'ivy', 40, '2030-01-01T00:00:00')
        upload(reg.root, 'bo', 30, '2030-01-01T00:01:00'); bo1 = upload(reg.root, 'bo', 1, '2030-01-01T00:02:00')
        q = upload(reg.root, 'quitter', 1, '2030-01-01T00:03:00')
        upload(reg.root, 'ghost', 0, '2030-01-01T00:04:00')   # closed with no step: never an input
        ctx = lambda s: ProducerContext(reg, 1, s, tmp_path/'work')
        with pytest.warns(UserWarning, match='clones: skipped 3'): ids = produce_clones(ctx(CloneSettings(8, 1)))
        assert sorted(reg.genome(i)['name'] for i in ids) == ['Bo-clone1', 'Ivy-clone1']
        report = json.loads((tmp_path/'work'/'clones.skipped.json').read_text())
        assert [s['input'] for s in report['skipped']] == [bo1, q, 'quitter'], report
        assert 'none of quitter' in report['skipped'][2]['reason'] and report['season'] == 1
        with pytest.warns(UserWarning, match='clusters: skipped 2'): made = produce_clusters(ctx(ClusterSettings(3, 8, 1)))
        assert len(made) == 2 and all(reg.genome(i)['type'] == 'cluster' for i in made)
        report = json.loads((tmp_path/'work'/'clusters.skipped.json').read_text())
        assert sorted(s['input'] for s in report['skipped']) == sorted([bo1, q]), report   # in session-id order
