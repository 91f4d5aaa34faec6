"""A new arena is one class and one entry point of `genome_lab.arenas.arena`: it declares how a season plays it
(`Arena.season`) and a genome type of its own (`Arena.genome_types`), and a season plays it next to the built-in arenas,
rates its genomes and selects among them, with no edit to `seasons`."""
import numpy as np
import pytest
from genome_lab.arenas import arena
from genome_lab.arenas.arena import Arena, ArenaSeason, Episodes, arena_names
from genome_lab.arenas.policies import RandomPolicy
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome, genome_types
from genome_lab.ecosystem.seasons import run_season, season_parser, season_config_from_args

class CoinArena(Arena):
    "Each agent calls a coin `rounds` times a game and scores a point for every 'heads' (action 1)."
    name, num_actions = 'coin', 2
    limits = dict(num_envs=(1, 64), rounds=(1, 100))
    season = ArenaSeason(steps=20, agents=4, max_active=2, required_types=('coin',), settings=dict(rounds=10))
    genome_types = ('coin',)
    def __init__(self, num_envs:int=4, rounds:int=10):
        self.rounds = rounds
        self._make_buffers(num_envs, (1,))
        self.reset(0)
    def _reset(self, seed:int): self._ret, self._len = np.zeros(self.num_agents), np.zeros(self.num_agents, np.int64)
    def _step(self): self.rewards[:] = self.actions == 1
    def _track(self): # a game ends after `rounds` calls: its score is the heads called
        self._ret += self.rewards; self._len += 1
        idx = np.flatnonzero(done := self._len >= self.rounds)
        if len(idx): self._finished.append(Episodes(idx, self._ret[idx], 1.0*self._len[idx], self._ret[idx], 0.0*idx))
        self._ret[idx], self._len[idx] = 0, 0   # the rows above are copies (fancy indexing)
        return done

@pytest.fixture
def coin_installed(install_entry_point, monkeypatch):
    "The arena as an installed package declares it: one entry point, `coin = test_arena_plugin:CoinArena`."
    monkeypatch.setattr(arena, 'ARENAS', dict(arena.ARENAS))   # loaded into a copy: forgotten after the test
    install_entry_point('genome_lab.arenas', 'coin', f'{__name__}:CoinArena')

def coin_genome(reg:Registry, name:str, heads:float, status:str)->str: # its id
    "A coin caller that calls heads with probability `heads` (a `random` genome with those odds)."
    pol = RandomPolicy(2)
    pol.logits.data[:] = torch_log([1 - heads, heads])
    g = Genome(name=name, type='coin', arena='coin', arch='random', config=dict(num_actions=2), source='test')
    return reg.add(g, pol.state_dict(), status=status).id

def torch_log(p): import torch; return torch.log(torch.tensor(p))

def test_a_fourth_arena_joins_a_season_by_its_entry_point_alone(tmp_path, coin_installed):
    assert 'coin' in arena_names() and 'coin' not in arena.ARENAS   # known, not loaded yet
    assert 'coin' in genome_types('coin') and 'coin' not in genome_types('snake')   # its own genome type
    flags = ['--producers', '', '--batch', '4', '--max-meetings', '2', '--arena-settings', 'snake.steps=30',
             'snake.agents=2', 'snake.width=24', 'snake.height=24', 'snake.num_food=10', 'tetris.steps=30',
             'tetris.agents=2', 'coin.rounds=5']
    cfg = season_config_from_args(vars(season_parser().parse_args(flags)))
    assert cfg.arena_of('coin') == ArenaSeason(steps=20, agents=4, max_active=2, required_types=('coin',),
                                               settings=dict(rounds=5))   # its own, with the flag's over them
    with pytest.raises(ValueError, match=r"arena 'coin' has no season settings \['width'\]"):
        season_config_from_args(vars(season_parser().parse_args(['--arena-settings', 'coin.width=5'])))
    with Registry(tmp_path/'reg') as reg:
        seed_founders(reg)
        ids = dict(Tails=coin_genome(reg, 'Tails', 0.05, 'active'), Fair=coin_genome(reg, 'Fair', 0.5, 'active'),
                   Heads=coin_genome(reg, 'Heads', 0.95, 'candidate'))
        row = run_season(reg, cfg)
        assert not [v for v in row['violations'] if v.startswith('coin') or 'failed' in v], row['violations']
        assert {'snake', 'tetris', 'coin'} <= set(row['stability'])   # played next to the others
        assert all(reg.games(i) > 0 and i in reg.ratings() for i in ids.values())   # every coin genome rated
        status = {n: reg.genome(i)['status'] for n, i in ids.items()}
        assert status == dict(Heads='active', Fair='active', Tails='retired'), status   # selected: at most 2 active
        assert dict(arena='coin', removed='Tails', added='Heads') in row['replacements']
        t, _ = reg.tournament(reg.tagged_evaluation('tournament', 'coin', 'season', row['id']))
        assert (t['agents_per_genome'], t['steps'], t['settings']) == (4, 20, dict(rounds=5))   # the plan it played
