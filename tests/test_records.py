"""Records say no more than their checks measured (issue 53): every lead flag in nbs/measured follows from the numbers
beside it by the project's one rule (`lead_verdict`, 20_tournament), or reads "pending"."""
import json
import pytest
from genome_lab.core import measured_dir
from genome_lab.tournaments.ranking import lead_verdict, LEAD_GAMES, CHECK_SEEDS

def flagged(x, path=''): # [(path, a dict that holds a lead flag or verdicts)]
    """Dicts with a `reached` flag, a true/false `lead` (a number under `lead` is a stop rule's sigma lead) or `leads`
    (verdicts per founder), outside the `leads` they explain."""
    if isinstance(x, dict):
        mine = isinstance(x.get('reached'), bool) or x.get('reached') == 'pending' or isinstance(x.get('lead'), bool) or 'leads' in x
        return [(path, x)] * mine + [h for k, v in x.items() if k != 'leads' for h in flagged(v, f'{path}/{k}')]
    return [h for i, v in enumerate(x) for h in flagged(v, f'{path}[{i}]')] if isinstance(x, list) else []

def check_record(rec:dict, where:str):
    """A `reached` flag or `leads`: verdicts per founder, each `lead_verdict` of its `checks`, and reached = every
    founder led; a true/false `lead` anywhere else is a bare flag."""
    if rec.get('reached') == 'pending': return
    assert not isinstance(rec.get('lead'), bool), f"{where}: a bare flag, not the lead rule's"
    leads, checks = rec.get('leads'), rec.get('checks')
    assert leads and checks, f"{where}: reached={rec.get('reached')} with no `leads` and `checks` behind it"
    for founder, v in leads.items():
        again = lead_verdict([c for c in checks if c['founder'] == founder], LEAD_GAMES, len(CHECK_SEEDS))
        assert {k: v[k] for k in ('wins', 'losses', 'lead')} == {k: again[k] for k in ('wins', 'losses', 'lead')}, \
            f"{where}: the lead on {founder} disagrees with its checks ({v} against {again})"
        assert abs(v['p'] - again['p']) < 1e-9, f"{where}: p of {founder}"
    if 'reached' in rec: assert rec['reached'] == all(v['lead'] for v in leads.values()), f"{where}: reached is not 'every founder led'"

FILES = sorted(measured_dir().glob('*.json'))

@pytest.mark.parametrize('path', FILES, ids=[p.name for p in FILES])
def test_every_lead_flag_follows_its_own_checks(path):
    for where, rec in flagged(json.loads(path.read_text())):
        check_record(rec, f'{path.name}{where}')

def test_a_flag_that_says_more_than_its_checks_is_caught():
    at = lambda s, w, l: dict(founder='F', seed=s, games=48, wins=w, losses=l, draws=48 - w - l)
    checks = [at(1, 30, 18), at(2, 24, 24), at(3, 32, 16)]   # level at one seed: no lead
    good = dict(reached=False, checks=checks, leads={'F': lead_verdict(checks)})
    check_record(good, 'good')
    with pytest.raises(AssertionError, match='disagrees'):
        check_record(dict(good, leads={'F': dict(good['leads']['F'], lead=True)}, reached=True), 'forged')
    with pytest.raises(AssertionError, match='bare flag'):
        check_record(dict(reached=True, lead=True), 'bare')
    with pytest.raises(AssertionError, match='no `leads`'):
        check_record(dict(reached=True), 'alone')
