"""The browser game (genome_lab.web.play): its frame rate with 50 enemy snakes on the tournament map (80x48), next to a
baseline measured in the same run (goal: 30 frames per second), and how long a scripted person survives in the
default game, next to the first version's default measured in the same run.

1. Engine: `PlayGame.step` + `PlayGame.frame` + the frame's JSON, back to back, one torch thread: the frames per
   second the server can make for one player. Enemies are the founding genomes, spawned in the design's
   spawn shares (docs/design.md, Game client).
2. Socket: frames per second a WebSocket client receives from `/play/socket` when the game is not throttled
   (`fps` set far above what it can make): the engine, the event loop and the transport together, the client in
   another thread of this process (it shares the cores).
3. Baseline: the tournament's `SnakeGame` (20_tournament) on the same map with the same 51 snakes (3 founders of 17
   snakes), steps per second: what the arena and the genomes cost without the game around them.
4. Browser: Debian's headless Chromium plays the default game at its own pace (`PlayConfig().fps` steps a second;
   spawn protection for the whole measurement, so that the person, steering in a square, lives through it): the
   frames per second the page draws (`requestAnimationFrame` paints: the view slides between two steps) next to the
   steps per second its socket delivers.
5. Survival: a scripted person, the founders' `SnakeHeuristic` on the person's 11x11 view, plays `--survival-games`
   games (seeds 0, 1, ...) of `PlayConfig()` (the default: enemies by map size, spawn protection) and the same seeds
   with the first version's default (`PlayConfig(enemies=50, protect_s=0)`); the median steps to its death (a game
   that reaches `max_steps` counts its length).

The machine is shared: `uptime`'s load is printed at the start and the end.

    OMP_NUM_THREADS=1 .venv/bin/python bench/play.py [--enemies 50] [--seconds 5] [--survival-games 40] [--json nbs/measured/play.json]
"""
import base64, json, tempfile, time
from pathlib import Path
from dataclasses import dataclass
from typing import Annotated
from genome_lab.core import atomic_write_json
from kit import parse
import numpy as np
import torch

def load()->list: return open('/proc/loadavg').read().split()[:3]

def rate(fn, seconds:float)->tuple: # (calls per second, calls)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds: fn(); n += 1
    return n / (time.perf_counter() - t0), n

def heuristic_key(m:dict, W:int, H:int)->int:
    "The person's key in the socket measurement: the founders' `SnakeHeuristic` on the 11x11 view around the head."
    from genome_lab.arenas.policies import SnakeHeuristic
    from genome_lab.arenas.arena import SNAKE_VISION, SNAKE_WALL
    from genome_lab.web.play_game import PLAYER_CELL
    cells = np.frombuffer(base64.b64decode(m['cells']), np.uint8).reshape(H, W)
    codes = np.pad(np.where(cells >= PLAYER_CELL, 4, cells).astype(np.int8), SNAKE_VISION, constant_values=SNAKE_WALL)
    (r, c), w = m['you'], 2*SNAKE_VISION + 1
    return int(SnakeHeuristic().act(codes[None, r:r + w, c:c + w])[0][0])

def browser(url:str, seconds:float)->dict: # {'browser_draws_per_s', 'browser_steps_per_s', 'browser_seconds'}
    "Open `url`/play in headless Chromium, start a game, steer in a square for `seconds`; the page's paints and steps per second."
    import shutil
    from playwright.sync_api import sync_playwright
    from live_view import CHROMIUM_FLAGS
    count = "({t: performance.now(), draws: window.play.draws, frames: window.play.frames})"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which('chromium'), args=CHROMIUM_FLAGS)
        page = b.new_page(viewport={'width': 1280, 'height': 820})
        page.goto(f'{url}/play', wait_until='load'); page.fill('#player', 'bench'); page.click('#start')
        page.wait_for_function('window.play.frames >= 1', timeout=30_000); page.keyboard.press('ArrowUp')
        page.wait_for_function('window.play.last && window.play.last.t > 0', timeout=30_000)
        first, t0 = page.evaluate(count), time.perf_counter()
        for i in range(1, 10**6):
            if time.perf_counter() - t0 >= seconds: break
            page.wait_for_timeout(700); page.keyboard.press(['ArrowRight', 'ArrowDown', 'ArrowLeft', 'ArrowUp'][i % 4])
        last, dead = page.evaluate(count), page.evaluate('window.play.death')
        b.close()
    span = (last['t'] - first['t']) / 1000
    if dead: raise RuntimeError(f"the browser's player died during the measurement: {dead}")
    return dict(browser_draws_per_s=(last['draws'] - first['draws']) / span, browser_steps_per_s=(last['frames'] - first['frames']) / span,
                browser_seconds=span)

def survival(enemies, cfg, seeds:list)->list: # steps the scripted person survived in each game
    "Games of `cfg` on `seeds`, the person steered by `SnakeHeuristic` on its view (the engine: no socket, no pacing)."
    from genome_lab.arenas.policies import SnakeHeuristic
    from genome_lab.web.play_game import PlayGame
    person, out = SnakeHeuristic(), []
    for s in seeds:
        game = PlayGame(enemies, cfg, seed=s)
        while not game.over:
            game.press(int(person.act(game.obs[:1], None)[0][0])); game.step()
        game.close(); out.append(game.t)
    return out

@dataclass
class PlayBench:
    "The play bench's settings."
    enemies: Annotated[int, 'enemy snakes on the map'] = 50
    seconds: Annotated[float, 'seconds per measurement'] = 5.0
    survival_games: Annotated[int, 'games per setting of the survival measurement'] = 40
    json: Annotated[str, 'write the figures to this file (e.g. nbs/measured/play.json)'] = ''

def main(argv=None):
    a = parse(PlayBench, doc=__doc__, argv=argv)
    torch.set_num_threads(1)
    from websockets.sync.client import connect
    from websockets.exceptions import ConnectionClosed
    from genome_lab.registry.store import Registry, seed_founders
    from genome_lab.web.server import create_app, serve_in_thread
    from genome_lab.web.play_game import PlayConfig, PlayGame, Enemies
    from genome_lab.web.play import PlayLimits, router
    from genome_lab.arenas.arena import SnakeArena
    from genome_lab.tournaments.tournament import SnakeGame
    print(f"load at start: {load()}")
    root = Path(tempfile.mkdtemp(prefix='bench_play_'))/'reg'
    with Registry(root) as reg: seed_founders(reg)
    cfg = PlayConfig(enemies=a.enemies, max_steps=10**9)
    app = create_app(root, token='bench-play-token', routers=[router])
    app.state.play_config = PlayConfig(enemies=a.enemies, fps=10_000.0, protect_s=0.0, max_steps=10**9)
    app.state.options[PlayLimits] = PlayLimits(play_max_messages_per_s=10**4)   # a key a frame of an unthrottled game
    out = dict(enemies=a.enemies, map=SnakeArena.game_settings, seconds=a.seconds)
    with Registry(root) as reg: client = Enemies(reg)
    with serve_in_thread(app) as url:
        by_name = {g['name']: i for i, g in client.genomes.items()}
        person = client.policies[by_name['PufferSnake']]   # the person's keys: PufferSnake's, so that games last
        games = [PlayGame(client, cfg, seed=0)]
        box = dict(state=person.initial_state(1), slots={})
        def engine():
            game = games[-1]
            if game.over:   # "play again": a new game, its set-up counted
                game.close(); game = PlayGame(client, cfg, seed=len(games)); games.append(game)
                box.update(state=person.initial_state(1), slots={})
            key, box['state'] = person.act(game.obs[:1], box['state'])
            game.press(int(key[0])); game.step(); json.dumps(game.frame(box['slots']))
        for _ in range(30): engine()   # past the first steps, as in a game under way
        out['engine_fps'], out['engine_frames'] = rate(engine, a.seconds)
        out['engine_games'] = len(games)
        out['spawned'] = sorted({client.genomes[g]['name'] for g in games[-1].genome[1:]})
        games[-1].close()
        spans, total = [], 0.0   # (frames - 1, seconds from the first frame to the last) of each game
        while total < a.seconds:
            with connect(url.replace('http', 'ws', 1) + f'/play/socket?seed={len(spans)}', origin=url, max_size=None) as ws:
                frames, t0 = 0, None
                for m in ws:
                    m = json.loads(m)
                    if m['type'] == 'start': W, H = m['width'], m['height']
                    if m['type'] != 'frame': continue
                    t1 = time.perf_counter(); t0 = t0 or t1; frames += 1
                    try: ws.send(json.dumps(dict(key=heuristic_key(m, W, H))))   # the first key starts the game
                    except ConnectionClosed: break   # the person died: the server closed the game
                    if total + t1 - t0 >= a.seconds: break
            spans.append((frames - 1, t1 - t0)); total += t1 - t0
        shown = sum(n for n, _ in spans)   # frames after each game's first
        out['socket_fps'], out['socket_frames'] = shown / total, shown + len(spans)
        out['socket_games'] = len(spans)
        app.state.play_config = PlayConfig(enemies=a.enemies, protect_s=a.seconds + 10, max_steps=10**9)   # the default pace
        out.update(browser(url, a.seconds))
    pols = [client.policies[by_name[name]] for name in ('PufferSnake', 'HeuristicSnake', 'RandomSnake')]
    n_each = (a.enemies + 1) // 3
    arena = SnakeArena(**{**SnakeArena.game_settings, 'num_snakes': 3*n_each})
    base = SnakeGame(pols, arena, 0, n_each)
    out['baseline_steps_per_s'], out['baseline_steps'] = rate(base.step, a.seconds)
    out['baseline_snakes'] = 3*n_each
    base.close(); arena.close()
    seeds = list(range(a.survival_games))
    new, old = PlayConfig(), PlayConfig(enemies=50, protect_s=0.0)
    out['survival_enemies'], out['survival_enemies_old'] = new.enemy_count(), old.enemy_count()
    out['survival_protect_steps'], out['survival_games'] = new.protect_steps, a.survival_games
    out['survival_all'], out['survival_all_old'] = survival(client, new, seeds), survival(client, old, seeds)
    out['survival_steps'], out['survival_steps_old'] = (float(np.median(out[k])) for k in ('survival_all', 'survival_all_old'))
    out['load'] = load()
    print(f"enemies {a.enemies} on {SnakeArena.game_settings['width']}x{SnakeArena.game_settings['height']} "
          f"(spawned: {', '.join(out['spawned'])})")
    print(f"engine (step + frame + JSON):         {out['engine_fps']:8.1f} frames/s  ({out['engine_frames']} frames, "
          f"{out['engine_games']} games)  goal 30")
    print(f"socket (frames received, unthrottled): {out['socket_fps']:8.1f} frames/s  ({out['socket_frames']} frames, "
          f"{out['socket_games']} games)  goal 30")
    print(f"browser (paints, game at its pace):   {out['browser_draws_per_s']:8.1f} frames/s  (its socket: "
          f"{out['browser_steps_per_s']:.1f} steps/s, {out['browser_seconds']:.1f} s)  goal 30")
    print(f"baseline SnakeGame, {out['baseline_snakes']} snakes:      {out['baseline_steps_per_s']:8.1f} steps/s   "
          f"({out['baseline_steps']} steps)")
    print(f"survival, scripted person (median steps, {a.survival_games} games): default ({out['survival_enemies']} enemies, "
          f"{out['survival_protect_steps']} steps protected) {out['survival_steps']:.0f}; first version's default "
          f"({out['survival_enemies_old']} enemies, none) {out['survival_steps_old']:.0f}")
    print(f"load at end: {out['load']}")
    if a.json: atomic_write_json(a.json, out)
    return out

if __name__ == '__main__': main()
