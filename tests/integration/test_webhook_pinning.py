"""The deliverer connects to the address it checked, and says the name it was given: a name
whose DNS answer changes between the check and the connection (rebinding) cannot move the
POST, and over TLS the certificate is checked against the name, not the address.

The resolver is the port swapped here (a table of answers, as an attacker's DNS server
would give them); the receivers are real servers on the loopback, which the policy allows
by network as an operator would."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from contract.events import Published
from hcp.bootstrap import Container
from hcp.settings import Settings
from integrations.webhooks.deliverer import Backoff, Deliverer
from integrations.webhooks.secrets import SecretBox
from integrations.webhooks.sender import PinnedSender
from integrations.webhooks.subscriptions import Subscriptions
from integrations.webhooks.targets import TargetPolicy, parse_allowlist
from kernel.db import make_engine
from tests.ports import free_port
from tests.unit.evaluators.factories import contract_text, publish
from tests.webhooks import SECRET, received, receiver

LOOPBACK = parse_allowlist(["127.0.0.1/32"])[0]


class Answers:
    """A DNS server under an attacker's control: the answers it gives, in turn."""

    def __init__(self, *answers: str) -> None:
        self.answers, self.asked = list(answers), 0

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked += 1
        return [self.answers[min(self.asked, len(self.answers)) - 1]]


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    c = Container(Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path),
                  make_engine(database_url))
    yield c
    c.close()


def deliver_once(c: Container, url: str, dns: Answers, verify: ssl.SSLContext | bool = True) -> Deliverer:
    policy = TargetPolicy(LOOPBACK, resolve=dns)
    subs = Subscriptions(c.engine, c.store, SecretBox(c.settings.resolved_webhook_key_file), policy)
    subs.subscribe(url, [Published.TYPE], SECRET, None, "ops")
    name = f"pinned-{uuid.uuid4().hex[:6]}"
    publish(c.contracts, contract_text(name=name), name=name)
    deliverer = Deliverer(c.engine, c.store, subs, c.integrations.deliveries, c.checkpoints,
                          PinnedSender(policy, 2.0, verify), Backoff(max_attempts=5))
    deliverer.step()
    deliverer.sender.close()
    return deliverer


def test_the_post_goes_to_the_checked_address_with_the_name_as_host(
        container: Container, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    dns = Answers("127.0.0.1", "127.0.0.1", "169.254.169.254")  # creation, attempt, then rebound
    with receiver(port, out):
        deliver_once(container, f"http://rebind.test:{port}/in", dns)
    (got,) = received(out)
    assert got["host"] == f"rebind.test:{port}" and got["valid"]
    assert dns.asked == 2  # once when made, once for the attempt: the client asked nobody else


def test_a_name_rebound_to_an_internal_address_after_the_check_is_refused(
        container: Container, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    dns = Answers("127.0.0.1", "10.0.0.7")  # allowed when made; not when sent
    with receiver(port, out):
        deliver_once(container, f"http://rebind.test:{port}/", dns)
    assert received(out) == []
    (attempt,) = container.integrations.deliveries.page(
        container.integrations.subscriptions.active()[0].subscription_id)
    assert attempt.status == "failed"


def test_tls_is_checked_against_the_name_not_the_address(container: Container, tmp_path: Path) -> None:
    authority, server = tls_pair(tmp_path, "hooks.test")
    port, heard = tls_receiver(server)
    deliver_once(container, f"https://hooks.test:{port}/", Answers("127.0.0.1"), authority)
    assert heard == ["hooks.test"]
    deliver_once(container, f"https://other.test:{port}/", Answers("127.0.0.1"), authority)
    # The certificate names hooks.test and the address 127.0.0.1: checked against the
    # address it would pass; against the name other.test it fails, and nothing is sent.
    assert set(heard) == {"hooks.test"}


def tls_pair(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A certificate authority the client trusts, and a server certificate for ``name``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test authority")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name), x509.IPAddress(
                ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (tmp_path / "server.pem").write_bytes(
        cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "server.pem")
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return client, server


def tls_receiver(context: ssl.SSLContext) -> tuple[int, list[str]]:
    heard: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            heard.append(str(self.headers.get("host")).split(":")[0])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], heard
