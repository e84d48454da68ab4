"""A real Dovecot IMAP server on 127.0.0.1 for the IMAP tests, throwaway and self-contained.

``start_dovecot(tmp)`` writes a config (its own base_dir, state, logs, a passwd-file user
database, Maildirs under tmp, a self-signed certificate), starts ``dovecot -F`` on two free
ports (IMAP with STARTTLS, and IMAPS), waits until it greets, and returns a handle whose
``stop()`` ends that one process. Nothing of the system's Dovecot configuration is used.

Dovecot wants a line break after every ``{`` in its config: the template keeps to that.
"""

from __future__ import annotations

import grp
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

USER = "alice"
PASSWORD = "s3cret-pass"

DOVECOT = shutil.which("dovecot") or ("/usr/sbin/dovecot"
                                      if os.path.exists("/usr/sbin/dovecot") else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Dovecot:
    host: str
    port: int  # plain IMAP, STARTTLS offered
    ssl_port: int  # implicit TLS
    root: Path
    proc: subprocess.Popen[bytes]
    user: str = USER
    password: str = PASSWORD

    def url(self, folder: str, query: str = "insecure=1") -> str:
        return f"imap://{self.user}@{self.host}:{self.port}/{folder}" + (
            f"?{query}" if query else "")

    def client(self) -> imaplib.IMAP4:
        """A logged-in plain connection for the test to create folders and APPEND mail."""
        conn = imaplib.IMAP4(self.host, self.port, timeout=10)
        conn.login(self.user, self.password)
        return conn

    def log(self) -> str:
        p = self.root / "dovecot.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.root, ignore_errors=True)


def _certificate(root: Path) -> tuple[Path, Path]:
    cert, key = root / "cert.pem", root / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def start_dovecot() -> Dovecot:
    """Start a server in a fresh directory of its own (not pytest's tmp_path: as root, Dovecot's
    unprivileged processes must be able to traverse to their files, and pytest's tmp dirs
    are private), removed again by ``stop()``."""
    assert DOVECOT, "dovecot is not installed (scripts/setup installs dovecot-imapd)"
    root = Path(tempfile.mkdtemp(prefix="textsieve-dovecot-"))
    root.chmod(0o711)
    for sub in ("run", "state", "mail", "home"):
        (root / sub).mkdir(exist_ok=True)
    cert, key = _certificate(root)
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:  # Dovecot will not run its login and internal processes as root
        internal, login = "dovecot", "dovenull"
        owner = pwd.getpwnam(internal)
        os.chown(root / "mail", owner.pw_uid, owner.pw_gid)
        os.chown(root / "home", owner.pw_uid, owner.pw_gid)
        mail_uid, mail_gid = owner.pw_uid, owner.pw_gid
    else:
        internal = login = pwd.getpwuid(uid).pw_name
        mail_uid, mail_gid = uid, gid
    group = grp.getgrgid(os.getgid()).gr_name if uid else "dovecot"
    port, ssl_port = _free_port(), _free_port()
    (root / "users").write_text(
        f"{USER}:{{PLAIN}}{PASSWORD}:{mail_uid}:{mail_gid}::{root / 'home' / USER}::\n")
    conf = root / "dovecot.conf"
    conf.write_text(f"""\
base_dir = {root / 'run'}
state_dir = {root / 'state'}
log_path = {root / 'dovecot.log'}
instance_name = textsieve-test-{port}
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
login_trusted_networks = 127.0.0.1/8
default_internal_user = {internal}
default_internal_group = {group}
default_login_user = {login}
first_valid_uid = {min(mail_uid, 1)}
first_valid_gid = 0
mail_location = maildir:{root / 'mail'}/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root / 'users'}
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {root / 'users'}
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {ssl_port}
    ssl = yes
  }}
}}
""")
    proc = subprocess.Popen([DOVECOT, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    server = Dovecot("127.0.0.1", port, ssl_port, root, proc)
    deadline = time.monotonic() + 15
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"dovecot exited with {proc.returncode}: {err}\n{server.log()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.settimeout(2)
                if s.recv(64).startswith(b"* OK"):
                    return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"dovecot did not answer on port {port}\n{server.log()}")
        time.sleep(0.05)
