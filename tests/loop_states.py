"Helpers of the loop-protocol tests (test_training, test_league): two runs' states compared to the bit."
import numpy as np, torch

def same(a, b, path=''): # assert two states equal to the bit (tensors, arrays, numbers), wall seconds aside
    if isinstance(a, dict):
        assert set(a) == set(b), (path, set(a) ^ set(b))
        for k in a:
            if k != 'seconds': same(a[k], b[k], f'{path}/{k}')
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)): same(x, y, f'{path}/{i}')
    elif isinstance(a, torch.Tensor): assert torch.equal(a, b), path
    elif isinstance(a, np.ndarray): assert np.array_equal(a, b), path
    else: assert a == b or (a != a and b != b), (path, a, b)

def by_name(st:dict, reg)->dict: # a PPORun state with the registry's ids (random) as the genomes' names
    name = lambda i: reg.genome(i)['name'] if reg.has(i) else i
    st = {**st, 'run_id': None, 'start': name(st['start']), 'curve': [{**c, 'genome': name(c['genome'])} for c in st['curve']],
          'config': {**st['config'], 'opponents': ','.join(name(i) for i in st['config']['opponents'].split(',') if i)}}
    if st['league']:
        st['league'] = {**st['league'], 'ids': [name(i) for i in st['league']['ids']],
                        'draws': [(k, name(i)) for k, i in st['league']['draws']]}
    return st
