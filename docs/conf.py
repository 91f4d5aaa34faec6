"""Sphinx configuration of the docs site. `tools/docs.py` copies this folder next to the generated pages and builds it:
chapters are notebooks rendered by myst-nb as a run executed them, API pages are autodoc with the docments added."""
import functools, inspect, re
import genome_lab
from fastcore.docments import docments

# Python 3.11's `inspect.findsource` parses a class's whole module again on every call, and autodoc and the docments
# ask for the same classes' source hundreds of times a build: each class's answer is kept for the build (the files do
# not change under it, and the site is the same, byte for byte).
_findsource, _class_source = inspect.findsource, functools.cache(inspect.findsource)
inspect.findsource = lambda obj: _class_source(obj) if inspect.isclass(obj) else _findsource(obj)

project = 'genome_lab'
author = 'genome_lab developers'
release = version = genome_lab.__version__
extensions = ['myst_nb', 'sphinx.ext.autodoc']
exclude_patterns = ['_build', '**.ipynb_checkpoints', 'conf.py']
suppress_warnings = ['myst.header', 'mystnb.unknown_mime_type']

nb_execution_mode = 'off'        # the notebooks come executed by `genome-lab run`; the docs build runs nothing
nb_output_stderr = 'remove'      # progress bars and warnings stay in the run's notebooks
myst_heading_anchors = 3

autodoc_member_order = 'bysource'
autodoc_typehints = 'signature'
autodoc_preserve_defaults = True

html_theme = 'pydata_sphinx_theme'
html_title = 'genome_lab'
html_theme_options = {'navigation_with_keys': False, 'show_toc_level': 2,
                      'icon_links': [], 'footer_start': ['copyright'], 'footer_end': []}
html_show_sourcelink = False
html_static_path = ['_static']
html_css_files = ['styles.css']   # nbs/styles.css, copied by tools/docs.py: the site's one stylesheet of its own
html_copy_source = False

CODE = re.compile(r'(?<!`)`([^`]+)`(?!`)')

def md_to_rst(text:str)->str:
    "nbdev docstrings and docments are Markdown: `code` becomes an rST literal; other backticks, `*` and a trailing `_` stay text."
    parts = CODE.split(text)   # even indices: prose, odd: code spans
    prose = lambda t: re.sub(r'(\w)_(?=\W|$)', r'\1\\_', t.replace('*', '\\*').replace('`', '\\`'))
    out = []
    for i, p in enumerate(parts):
        if i % 2 == 0: out.append(prose(p)); continue
        before = '\\ ' if out[-1][-1:].isalnum() else ''   # rST literals must stand apart from letters: "`x`ed"
        after = '\\ ' if parts[i + 1][:1].isalnum() else ''
        out.append(f'{before}``{p}``{after}')
    return ''.join(out)

def add_docments(app, what, name, obj, options, lines):
    "Append the docments (`x:int=3, # what x is`) of a function, method or class as `:param:` and `:returns:` fields."
    if what == 'module': lines[:] = [l for l in lines if not l.startswith('Docs: ')]  # nbdev's link to its Quarto page
    lines[:] = md_to_rst('\n'.join(lines)).split('\n')   # whole: a `code` span may run over a line's end
    if what not in ('function', 'method', 'class'): return
    try: docs = docments(obj, full=True)
    except (TypeError, ValueError, OSError, SyntaxError): return  # builtins and objects without source
    text = '\n'.join(lines)
    fields = [f':param {k}: {md_to_rst(v["docment"])}' for k, v in docs.items()
              if k not in ('self', 'return') and v['docment'] and f':param {k}:' not in text]
    ret = docs.get('return') or {}
    if ret.get('docment') and ':returns:' not in text: fields.append(f':returns: {md_to_rst(ret["docment"])}')
    if fields: lines.extend(['', *fields])

def setup(app):
    app.connect('autodoc-process-docstring', add_docments)
