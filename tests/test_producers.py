"""A new producer is one settings dataclass, one function and one entry point of `genome_lab.producers`: a season runs
it with its settings (flags included) and its genome competes, with no edit to `seasons`; the season's after-season
hooks cut its highlights."""
import dataclasses
import pytest
from genome_lab.core import Producer, PRODUCERS, producer_names
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome
from genome_lab.tournaments.selection import mutate
from genome_lab.ecosystem.seasons import run_season, season_parser, season_config_from_args
from genome_lab.broadcast.highlights import HighlightStore, HIGHLIGHTS_DIR

@dataclasses.dataclass
class MutantSettings:
    "Settings of the mutants producer."
    mutant_sigma: float = 0.02 # Gaussian noise on PufferSnake's weights

def produce_mutants(ctx)->list:
    "A Gaussian mutant of PufferSnake per season, `Mutant-S<season>` (found by name when asked again)."
    reg, name = ctx.registry, f'Mutant-S{ctx.season}'
    if gid := reg.by_name(name): return [gid]
    g, params = reg.load(reg.by_name('PufferSnake'))
    child = Genome(name=name, type='rl', arena='snake', arch=g.arch, config=g.config, source='mutants',
                   parents=[dict(id=g.id, relation='mutation')])
    return [reg.add(child, mutate(params, ctx.settings.mutant_sigma, ctx.season_seed), status='candidate').id]

mutants = Producer(produce_mutants, MutantSettings)

@pytest.fixture
def mutants_installed(install_entry_point):
    "The producer as an installed package declares it: one entry point, `mutants = test_producers:mutants`."
    install_entry_point('genome_lab.producers', 'mutants', f'{__name__}:mutants')
    yield
    PRODUCERS.pop('mutants', None)

def test_a_producer_added_by_its_entry_point_alone_competes_in_a_season(tmp_path, mutants_installed):
    assert 'mutants' in producer_names() and 'mutants' not in PRODUCERS   # known, not loaded yet
    flags = ['--producers', 'mutants', '--mutant-sigma', '0.01', '--batch', '4', '--arena-settings', 'snake.steps=60',
             'snake.agents=2', 'snake.width=32', 'snake.height=24', 'snake.num_food=20', 'tetris.steps=30',
             'creatures.seconds=1']
    # its settings are flags of `genome-lab season`
    cfg = season_config_from_args(vars(season_parser().parse_args(flags)))
    assert cfg.settings_of('mutants') == MutantSettings(mutant_sigma=0.01)
    with Registry(tmp_path/'reg') as reg:
        seed_founders(reg)
        row = run_season(reg, cfg)
        made = [c for c in row['candidates'] if c['producer'] == 'mutants']
        assert [c['name'] for c in made] == ['Mutant-S1']
        gid = made[0]['id']
        assert reg.games(gid) > 0 and gid in reg.ratings()   # it played the season's snake tournament and was rated
        assert reg.genome(gid)['status'] in ('active', 'retired')   # and selection decided on it
        stored = reg.db.execute('SELECT config FROM seasons WHERE id=1').fetchone()[0]
        assert '"mutant_sigma": 0.01' in stored   # the season's row records the producer's settings

def test_a_worker_offers_between_seasons_and_the_season_takes_the_queue(tmp_path, mutants_installed, capsys):
    """`genome-lab produce NAME` runs between seasons (one worker per producer at a time, none while it is muted); a
    season training nothing plays its offer."""
    from genome_lab.core import run_lock
    from genome_lab.ecosystem.seasons import produce_cli, SeasonConfig
    root = tmp_path/'reg'
    with Registry(root) as reg: seed_founders(reg)
    with run_lock(root/'season_work'/'mutants.lock'):   # a worker of this producer is running
        assert produce_cli(['mutants', '--registry', str(root)]) == 2
    assert 'in use by another process' in capsys.readouterr().err
    with Registry(root) as reg: reg.mute_producer('mutants')   # the policy-ops switch: a muted producer offers nothing
    assert produce_cli(['mutants', '--registry', str(root)]) == 0
    assert '"offered": []' in capsys.readouterr().out
    with Registry(root) as reg: reg.mute_producer('mutants', False)
    assert produce_cli(['mutants', '--registry', str(root), '--mutant-sigma', '0.01']) == 0
    assert '"names": ["Mutant-S1"]' in capsys.readouterr().out
    with Registry(root) as reg:
        [gid] = reg.waiting_offers()
        cfg = SeasonConfig(producers='', batch=4, arena_settings=dict(
            snake=dict(steps=60, agents=2, width=32, height=24, num_food=20), tetris=dict(steps=30), creatures=dict(seconds=1.0)))
        row = run_season(reg, cfg)
        assert [(c['id'], c['producer']) for c in row['candidates']] == [(gid, 'mutants')]
        assert reg.games(gid) > 0 and reg.waiting_offers() == {}   # it played, and the queue is empty
