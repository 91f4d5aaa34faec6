"""Write README.md from nbs/index.ipynb (nbdev's own README step needs Quarto, which is not installable here).

Markdown cells are copied, code cells become ```python blocks with their text output; cells starting with
`#| hide` are left out. `python tools/readme.py --check` exits 1 if README.md is out of date.
"""
import sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parent.parent

def render(nb_path=ROOT/'nbs'/'index.ipynb') -> str:
    nb = nbformat.read(nb_path, as_version=4)
    parts = []
    for c in nb.cells:
        if c.source.lstrip().startswith('#| hide'): continue
        if c.cell_type == 'markdown': parts.append(c.source)
        elif c.cell_type == 'code':
            parts.append(f"```python\n{c.source}\n```")
            text = ''.join(o.get('text', '') or o.get('data', {}).get('text/plain', '') for o in c.get('outputs', []))
            if text: parts.append(f"```\n{text.rstrip()}\n```")
    head = "<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n\n"
    return head + "\n\n".join(parts) + "\n"

if __name__ == '__main__':
    out = ROOT/'README.md'
    if '--check' in sys.argv:
        ok = out.exists() and out.read_text() == render()
        print('README.md is up to date' if ok else 'README.md is out of date: run python tools/readme.py')
        sys.exit(0 if ok else 1)
    out.write_text(render())
