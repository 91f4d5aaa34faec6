"""The size of the notebooks' exported cells, against the house style (nbdev's rhythm: one definition per cell): no
exported cell over `MAX_LINES` lines unless its one definition is a class (a class keeps the methods that belong
together in its body, whatever its length: issue 59), and fewer than `MAX_MULTI` of them holding more than one
top-level definition (`def`, `async def`, `class`; a `@patch` method counts as one).

    python tools/cellstats.py            # the figures and the largest cells
    python tools/cellstats.py --check    # exit 1, naming every offending cell, when a bar is not held
"""
import argparse, ast, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 80     # lines of one exported cell, its directives included
MAX_MULTI = 0.20   # share of exported cells with more than one top-level definition (nbdev's own notebooks: about 13%)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

def is_exported(src:str)->bool:
    "Does a code cell's leading block of `#|` directives hold `export` (or `exports`, `exporti`)?"
    for line in src.splitlines():
        if not line.startswith('#|'): return False
        if re.match(r'#\|\s*export', line): return True
    return False

def exported_cells(nbs:Path=ROOT/'nbs')->list: # [{'nb', 'index', 'id', 'lines', 'defs'}] of every exported cell
    "Every exported code cell of the notebooks in `nbs`, with its line count and the names of its top-level definitions."
    out = []
    for p in sorted(nbs.glob('*.ipynb')):
        for k, c in enumerate(json.loads(p.read_text())['cells']):
            src = ''.join(c['source'])
            if c['cell_type'] != 'code' or not is_exported(src): continue
            try: body = ast.parse(src).body
            except SyntaxError as e: raise SystemExit(f"{p} cell {k} ({c.get('id')}) does not parse: {e}")
            name = str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
            defs = [n.name for n in body if isinstance(n, DEFS)]
            one_class = len(defs) == 1 and any(isinstance(n, ast.ClassDef) for n in body)
            out.append(dict(nb=name, index=k, id=c.get('id'), lines=len(src.splitlines()), defs=defs, one_class=one_class))
    return out

def where(c:dict)->str: return f"{c['nb']} cell {c['index']} (id {c['id']})"

def problems(cells:list)->list: # lines saying what breaks a bar; empty when both are held
    "The cells over `MAX_LINES` lines (a one-class cell excepted), and the multi-definition cells when they are `MAX_MULTI` or more of all."
    out = [f"{where(c)}: {c['lines']} lines (at most {MAX_LINES} unless its one definition is a class: split it)"
           for c in cells if c['lines'] > MAX_LINES and not c['one_class']]
    multi = [c for c in cells if len(c['defs']) > 1]
    if cells and len(multi) / len(cells) >= MAX_MULTI:
        out.append(f"{len(multi)} of {len(cells)} exported cells ({len(multi)/len(cells):.1%}) hold more than one definition "
                   f"(the bar: under {MAX_MULTI:.0%}); one cell per definition:")
        out += [f"  {where(c)}: {', '.join(c['defs'])}" for c in multi]
    return out

def summary(cells:list)->str:
    multi = sum(len(c['defs']) > 1 for c in cells)
    return (f"exported cells {len(cells)}, multi-definition {multi} ({multi/max(len(cells), 1):.1%}), "
            f"over {MAX_LINES} lines {sum(c['lines'] > MAX_LINES for c in cells)} ({sum(c['lines'] > MAX_LINES and c['one_class'] for c in cells)} "
            f"of them one class), largest {max((c['lines'] for c in cells), default=0)}")

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--check', action='store_true', help="exit 1 naming the offending cells when a bar is not held")
    ap.add_argument('--nbs', type=Path, default=ROOT/'nbs', help="the notebooks' folder")
    a = ap.parse_args()
    cells = exported_cells(a.nbs)
    print(summary(cells))
    if a.check:
        if bad := problems(cells): print('\n'.join(bad)); sys.exit(1)
    else:
        for c in sorted(cells, key=lambda c: -c['lines'])[:10]: print(f"  {c['lines']:4d} {where(c)}")
