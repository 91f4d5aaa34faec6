"""bench/watching.py: a smoke run writes the figures file's keys (32_watching and 71_video_models cover the modules)."""
import json
from pathlib import Path


def test_bench_writes_the_issue_keys(tmp_path, cli, bench):
    out = tmp_path/'watching.json'
    args = ['--seeds', '1', '--steps', '40', '--snakes', '5', '--label-frac', '0.2', '--idm-epochs', '1',
            '--clone-epochs', '1', '--eval-seeds', '10', '--window', '20', '60', '--tetris-seeds', '1', '2',
            '--tetris-test-games', '1', '--tetris-steps', '40', '--noise', '0', '0.5', '1', '--tetris-epochs', '1',
            '--trex-pairs', '16', '--segment', '20', '--latent-codes', '4', '--lam-epochs', '1', '--skill-codes', '2',
            '--skill-epochs', '1', '--parts', 'snake', 'tetris', '--json', out]  # the season: 1 s more, run by hand
    ran = cli(*args, main=bench('watching').main)
    assert ran.returncode == 0, ran.stderr
    r = json.loads(out.read_text())
    assert {'idm_accuracy', 'labelled_fraction', 'video_clone_ratio', 'reward_spearman', 'adapter_curve'} <= set(r)
    assert set(r['idm_accuracy']) == {'snake', 'tetris'} and set(r['adapter_curve']) == {'0.01', '0.03', '0.1'}
    assert r['tetris']['n_labelled'] == 1 and r['tetris']['idm_n'] == 5 * 40 and r['reward']['n_clips'] == 3
    assert r['labelled_fraction'] == 2 / 10 and 0 <= r['idm_accuracy']['snake'] <= 1
    assert r['idm_n'] == 8 * 40 and sum(m['size'] for m in r['failure_modes'].values()) == r['idm_n']
    assert set(r['ratios']) == {'first episodes', 'continuous'}

def test_video_producer_skips_a_clip_it_cannot_read(tmp_path, monkeypatch):
    "A clip that fails to decode (one labelled, one not) costs only itself: the clone learns from the others, the report names both."
    import pytest
    import genome_lab.players.watching as w
    from genome_lab.core import ProducerContext
    from genome_lab.registry.store import Registry
    from genome_lab.players.cloning import training_record
    real_film, damaged = w.film, []
    def film_and_damage(root, *a, **kw):
        index = real_film(root, *a, **kw)
        for labelled in (True, False):
            row = index[index.labelled == labelled].iloc[0]
            (Path(root)/row['path']).write_bytes(b'not a video'); damaged.append(row['clip'])
        film_and_damage.held = index.loc[~index.labelled, 'clip'].tolist()
        return index
    monkeypatch.setattr(w, 'film', film_and_damage)
    with Registry(tmp_path/'reg') as reg:
        ctx = ProducerContext(reg, 1, w.VideoSettings(video_games=1, video_steps=30, video_label_frac=0.3, video_idm_epochs=1,
                                                      video_clone_epochs=1), tmp_path/'work')
        with pytest.warns(UserWarning, match='videos: skipped 2 input'): ids = w.produce_video_clones(ctx)
        learned = training_record(reg.genome(ids[0])['description'])['videos']
    assert learned == [c for c in film_and_damage.held if c != damaged[1]] and len(learned) >= 4, (learned, damaged)
    report = json.loads((tmp_path/'work'/'videos.skipped.json').read_text())
    assert [s['input'] for s in report['skipped']] == damaged and all(s['reason'] for s in report['skipped']), report
