"""Patch an unpacked PufferLib 3.0.0 sdist so that every Snake and Tetris env owns its random stream.

    python tools/pufferlib_patch/apply.py SRC LOCAL_VERSION

Copies `genome_lab_rng.h` into `pufferlib/ocean/`, appends a `uint64_t rng` field at the end of `struct CSnake` and
`struct Tetris` (the fields before it keep their offsets), replaces every `rand()` of `snake.h` and `tetris.h` by a draw
from that field, replaces the three `srand` calls of `env_binding.h` by seeding the env's own state from (seed, env
index), and sets the package version to LOCAL_VERSION. Every edit must match the expected number of times, else it
stops with an error naming the file (a different sdist is not patched halfway).
"""
import re, shutil, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OCEAN = 'pufferlib/ocean'
INCLUDE = '#include "../genome_lab_rng.h"\n'
DRAW = 'genome_lab_rand(&env->rng)'

def edits(version:str)->dict: # {path: [(old, new, expected count)]}
    field = '{indent}uint64_t rng; // genome_lab: this env\'s random stream (genome_lab_rng.h)\n'
    return {
        f'{OCEAN}/snake/snake.h': [('#include "raylib.h"\n', '#include "raylib.h"\n' + INCLUDE, 1),
                                   ('    Client* client;\n};', '    Client* client;\n' + field.format(indent='    ') + '};', 1),
                                   ('rand()', DRAW, 4)],
        f'{OCEAN}/tetris/tetris.h': [('#include "raylib.h"\n', '#include "raylib.h"\n' + INCLUDE, 1),
                                     ('\tint atn_count_rotate;\n} Tetris;', '\tint atn_count_rotate;\n' + field.format(indent='\t') + '} Tetris;', 1),
                                     ('rand()', DRAW, 2)],
        f'{OCEAN}/env_binding.h': [('    srand(seed);\n', '    env->rng = genome_lab_rng_seed(seed, 0);\n', 1),
                                   ('        srand(env_seed);\n', '        env->rng = genome_lab_rng_seed(seed, i);\n', 1),
                                   ('        srand(i + seed*vec->num_envs);\n', '        vec->envs[i]->rng = genome_lab_rng_seed(seed, i);\n', 1)],
        'setup.py': [('    version="3.0.0",\n', f'    version="{version}",\n', 1)],
        'pyproject.toml': [('\nversion = "3.0.0"\n', f'\nversion = "{version}"\n', 1)],
    }

def patch(src:Path, version:str):
    "Apply `edits(version)` to the sdist unpacked at `src`; raises `SystemExit` naming the first edit that does not match."
    for rel, subs in edits(version).items():
        path = src/rel
        text = path.read_text()
        for old, new, n in subs:
            if (got := text.count(old)) != n: sys.exit(f"pufferlib patch: {rel}: expected {n} x {old.strip()!r}, found {got}")
            text = text.replace(old, new)
        if rel.endswith('.h') and re.search(r'\bs?rand\s*\(', text): sys.exit(f"pufferlib patch: {rel} still calls rand() or srand()")
        path.write_text(text)
    shutil.copy(HERE/'genome_lab_rng.h', src/OCEAN/'genome_lab_rng.h')

if __name__ == '__main__':
    if len(sys.argv) != 3: sys.exit(__doc__)
    patch(Path(sys.argv[1]), sys.argv[2])
