"""Hostile inputs for the tests of the producers (31_cloning, 32_watching, 33_clustering) and of the game socket
(85_play): sessions as players who leave early upload them, and WebSocket handshakes sent by hand. (Imports are
inside the functions: a storm of handshakes runs in a process of its own that imports nothing heavy.)"""

def upload(registry_root, player:str, steps:int, started:str)->str: # the session id
    "A closed uploaded session of `player` with `steps` steps (empty views, moves round the compass) started at `started`."
    import numpy as np
    from genome_lab.players.sessions import SessionWriter, uploaded_sessions
    w = SessionWriter(uploaded_sessions(registry_root), dict(player=player, kind='human', started=started), chunk_rows=64)
    for t in range(steps): w.append(obs=np.zeros(121, np.int8), action=t % 4, reward=0.0)
    return w.close()

def raw_handshake(port:int, path:str, host:str, origin:str|None=None, cookie:str|None=None,
                  timeout:float=30)->tuple: # (HTTP status, socket, bytes read past the response head)
    """A WebSocket handshake sent by hand to 127.0.0.1:`port`, so that its `Host` and `Origin` can name anything (a
    browser's could not): the status of the answer, and for a 101 the open socket to read frames from (`frames`)."""
    import base64, os, socket
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    head = [f'GET {path} HTTP/1.1', f'Host: {host}', 'Upgrade: websocket', 'Connection: Upgrade',
            f'Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}', 'Sec-WebSocket-Version: 13']
    head += [f'Origin: {origin}'] * (origin is not None) + [f'Cookie: {cookie}'] * (cookie is not None)
    s.sendall(('\r\n'.join(head) + '\r\n\r\n').encode())
    got = b''
    while b'\r\n\r\n' not in got:
        if not (chunk := s.recv(4096)): break
        got += chunk
    status = int(got.split(b' ', 2)[1]) if got else 0
    return status, s, got.partition(b'\r\n\r\n')[2]

def frames(s, got:bytes=b''): # yields (opcode, payload) of the server's frames (unmasked) until the socket closes
    "The frames a server sends on the raw socket `s` (`got`: bytes already read); a close frame ends them."
    import struct
    def need(n):
        nonlocal got
        while len(got) < n:
            if not (chunk := s.recv(65536)): raise EOFError
            got += chunk
        out, got = got[:n], got[n:]; return out
    while True:
        try: b0, b1 = need(2)
        except EOFError: return
        n = b1 & 0x7f
        n = struct.unpack('>H', need(2))[0] if n == 126 else struct.unpack('>Q', need(8))[0] if n == 127 else n
        op, payload = b0 & 0x0f, need(n)
        yield op, payload
        if op == 8: return
