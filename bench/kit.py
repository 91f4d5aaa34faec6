"""The benches' run kit (issue 48): one command line per bench from its config dataclasses (`parse`, on
`genome_lab.core.config_parser`), a step memo that lets a killed bench resume (`Memo`), and the merge-write of a
figures file that several benches share (`write_figures`), all written with `genome_lab.core.atomic_write`.
Benches import it as `from kit import ...` (bench/ is on `sys.path` when a bench runs as a script; pytest adds it)."""
import argparse, json, typing
from pathlib import Path
from genome_lab.core import atomic_write_json, config_fields, config_parser, config_from_args, settings_diff

def parse(*configs:type, # the bench's config dataclasses: one flag per field (`config_parser`)
          doc:str='', # the bench's docstring: its first line is the description in --help
          argv:list|None=None, # the arguments (None: the command line)
          positional:tuple=(), # fields also given by position, as `bench.py RUN` (a list field: any number of values)
          required:tuple=(), # fields that must be given (their defaults stand for "not given")
          ns:bool=False, # also return the parsed namespace (for a config read later with another base)?
          **kw): # `kw` go to `argparse.ArgumentParser` (an `epilog`, ...)
    """One instance per config in `configs`, from `argv` (a lone config: the instance itself); flags not given keep
    defaults; a config's `ValueError` exits with the usage and its message."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0] if doc.strip() else None, allow_abbrev=False, **kw)
    fields = {n: typing.get_type_hints(owner)[f.name] for c in configs for n, (owner, f) in config_fields(c).items()}
    for name in positional:   # a list field takes any number of values, another field one or none
        ap.add_argument(name, nargs='*' if typing.get_origin(fields[name]) is list else '?', default=argparse.SUPPRESS,
                        help=f'the same as --{name.replace("_", "-")}')
    a = config_parser(*configs, parser=ap).parse_args(argv)
    if missing := [n for n in required if not getattr(a, n, None)]:
        ap.error('give ' + ', '.join(n if n in positional else f'--{n.replace("_", "-")}' for n in missing))
    try: out = tuple(config_from_args(c, a) for c in configs)
    except ValueError as e: ap.error(str(e))   # a config's own check: the usage and what to fix, exit status 2
    out = out[0] if len(out) == 1 else out
    return (out, a) if ns else out

def _jsonable(obj): return json.loads(json.dumps(obj, default=float))   # as it reads back from the file

class Memo:
    """The finished steps of a bench run, kept as JSON at `path` with the settings `key` they were made under: a rerun
    with the same key skips the steps done (resume); a memo made under another key is refused with what differs
    (`ValueError`), or with `redo=True` started afresh (a per-step file whose settings changed)."""
    def __init__(self, path:str|Path, # the memo file (JSON), kept in the bench's work folder
                 key:dict, # the settings the steps depend on (JSON-able)
                 redo:bool=False): # start afresh where the stored key differs, rather than refuse?
        self.path, self.key, self.steps = Path(path), _jsonable(key), {}
        got = json.loads(self.path.read_text()) if self.path.exists() else None
        if got is not None and got.get('key') != self.key and not redo:
            raise ValueError(f"{self.path} holds steps made with other settings ({settings_diff(got.get('key') or {}, self.key)}):"
                             " rerun with those settings, or remove the file (or name another work folder) to start afresh")
        if got is not None and got.get('key') == self.key: self.steps = got['steps']

    def __contains__(self, step:str)->bool: return step in self.steps
    def __getitem__(self, step:str): return self.steps[step]
    def get(self, step:str, default=None): return self.steps.get(step, default)
    def __setitem__(self, step:str, value): # stored at once
        self.steps[step] = _jsonable(value); atomic_write_json(self.path, dict(key=self.key, steps=self.steps))

    def step(self, name:str, make): # `make()`'s value, JSON-able
        "The stored value of step `name`, or `make()` run and stored (as it reads back)."
        if name not in self: self[name] = make()
        return self[name]

def read_figures(path:str|Path)->dict: # {} when there is no file yet
    "The figures file at `path` (JSON)."
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}

def write_figures(path:str|Path, # the figures file (JSON), e.g. nbs/measured/dreaming.json
                  record:dict)->Path: # its keys replace the file's same keys
    "Write `record`'s keys into the figures file at `path`, keeping the file's other keys (other benches' figures)."
    return atomic_write_json(path, read_figures(path) | record)

def lead_record(registry:str|Path, # the bench's registry folder
                genome:str, # the challenger's id
                games:int|None=None, # games at each check seed; None: the rule's (`LEAD_GAMES`); fewer never make a lead
                given:dict|None=None)->dict: # season settings over the arena's own (a smoke test's short games); returns {'checks', 'leads', 'reached'}
    "The project's lead rule (`climb_check`: 40+ games at 3 held-out seeds against every non-random founder, a sign test) for `genome`."
    from genome_lab.registry.store import Registry
    from genome_lab.ecosystem.loop import climb_check
    with Registry(registry) as reg: rule = climb_check(reg, genome, **({'games': games} if games else {}), given=given)
    return {k: rule[k] for k in ('checks', 'leads', 'reached')}
