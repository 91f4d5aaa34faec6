"""Hostile inputs for the tests of the producers (21_cloning, 22_watching, 30_clustering) and of the game socket
(86_play): sessions as players who leave early upload them."""
import numpy as np
from genome_lab.sessions import SessionWriter, uploaded_sessions

def upload(registry_root, player:str, steps:int, started:str)->str: # the session id
    "A closed uploaded session of `player` with `steps` steps (empty views, moves round the compass) started at `started`."
    w = SessionWriter(uploaded_sessions(registry_root), dict(player=player, kind='human', started=started), chunk_rows=64)
    for t in range(steps): w.append(obs=np.zeros(121, np.int8), action=t % 4, reward=0.0)
    return w.close()
