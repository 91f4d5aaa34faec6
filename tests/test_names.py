"""One naming scheme for every producer (issue 46): `Registry.genome_name` makes `<Family>-<method><n>` (`NAMING`), and
every built-in producer's module names its genomes through it. The names producers made before (`PufferSnak-ppo18`,
`creature-f777869f792d-g5-r0`, `rep0-g40`, `PufferGreedyVideoCloneS1`, `HunterV2`, ...) are what this test refuses."""
import ast, re, tomllib
from pathlib import Path
import pytest
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome, NAMING, NAME_MAX, METHODS
from genome_lab.arenas.policies import RandomPolicy

ROOT = Path(__file__).resolve().parents[1]
PRODUCERS = tomllib.loads((ROOT/'pyproject.toml').read_text())['project']['entry-points']['genome_lab.producers']
MAKERS = {'rl.training', 'rl.league', 'imagination.dungeon_master', 'programs.sandbox', 'programs.tetris_players', 'imagination.dreaming'} # modules that build genomes beside the producers'

def test_every_method_gives_scheme_names_that_stay_unique(tmp_path):
    with Registry(tmp_path/'reg') as reg:
        ids = seed_founders(reg)
        for method in METHODS:
            for parent, family in ((ids['PufferSnake'], None), (ids['HeuristicSnake'], None), (None, 'creature')):
                g = reg.add(Genome(name=reg.genome_name(method, parent, family=family), type='rl', arena='snake', arch='random',
                                   config=dict(num_actions=4), source='test', parents=[dict(id=parent, relation='finetune')] if parent else []),
                            RandomPolicy(4).state_dict())
                assert NAMING.fullmatch(g.name) and len(g.name) <= NAME_MAX, g.name
        names = [reg.genome(i)['name'] for i in reg.ids()]
        assert len(set(names)) == len(names)
        assert {'PufferSnake-ppo1', 'HeuristicSnake-cluster1', 'Creature-ga1'} <= set(names)
        kid = reg.add(Genome(name='PufferSnake-ppo1', type='rl', arena='snake', arch='random', config=dict(num_actions=4), source='test'),
                      RandomPolicy(4).state_dict())   # a name taken meanwhile (two producers at once): the next n
        assert kid.name == 'PufferSnake-ppo2'

@pytest.mark.parametrize('old', ['creature-f777869f792d-g5-r0', 'rep0-g40', 'PufferGreedyVideoCloneS1', 'HunterV2',
                                 'IvyCloneV1', 'Creature-g400', 'main-exploiter-0-1536', 'program_search_seed1/prog_00021'])
def test_old_names_do_not_pass(old): assert not NAMING.fullmatch(old)

def genome_calls(path:Path)->list: # [(line, name argument's source)] of every Genome(...)/program_genome(...) call
    tree, out = ast.parse(path.read_text()), []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, 'id', getattr(n.func, 'attr', None)) in ('Genome', 'program_genome'):
            arg = next((k.value for k in n.keywords if k.arg == 'name'), n.args[0] if n.args else None)
            if arg is not None: out.append((n.lineno, ast.unparse(arg)))
    return out

@pytest.mark.parametrize('module', sorted({v.split(':')[0].partition('.')[2] for v in PRODUCERS.values()} | MAKERS))
def test_every_producer_names_its_genomes_by_the_scheme(module):
    "No genome name made by hand (an f-string, a literal, a sum) in a producer's module: `genome_name`, or a name handed in."
    bad = [(l, a) for l, a in genome_calls(ROOT/'genome_lab'/(module.replace('.', '/') + '.py'))
           if isinstance(ast.parse(a, mode='eval').body, (ast.JoinedStr, ast.Constant, ast.BinOp)) and 'genome_name' not in a]
    assert bad == [], bad
