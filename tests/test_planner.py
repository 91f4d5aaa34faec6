"""The planners of 74_planner in a season: the planner and student producers offer through the queue, and a search
genome plays its tournament games through `plan_moves` (issue 54)."""
import numpy as np
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.ecosystem.seasons import SeasonConfig, run_season
from genome_lab.arenas.policies import load_pufferlib_policy
from genome_lab.imagination.planner import SimPlanner
from genome_lab.tournaments.tournament import play_game

def test_a_season_plays_the_planner_and_the_students_offers(tmp_path):
    with Registry(tmp_path) as reg:
        seed_founders(reg)
        cfg = SeasonConfig(producers='planner,student', batch=4, max_meetings=1, arena_settings=dict(snake=dict(steps=30)),
                           producer_settings=dict(planner=dict(planner_horizon=3),
                                                  student=dict(student_rounds=1, student_snakes=8, student_steps=10,
                                                               student_keep=1, student_epochs=1)))
        row = run_season(reg, cfg)
        made = {reg.genome(o['genome'])['arch'] for o in reg.offers()}
        assert {'shielded_linear_lstm', 'sim_planner', 'linear_lstm'} <= made, made
        assert not [v for v in row['violations'] if 'failed' in v], row['violations']

def test_a_planner_game_is_a_function_of_its_genomes_and_seed():
    puffer = load_pufferlib_policy('snake')
    play = lambda: play_game([SimPlanner.from_prior(puffer, horizon=4), puffer], seed=3, snakes_per_genome=4, steps=80,
                             width=40, height=30, num_food=40)
    a, b = play(), play()
    assert np.array_equal(a.score, b.score) and np.array_equal(a.deaths, b.deaths)
