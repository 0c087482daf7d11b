"""Where a webhook may be sent: public addresses, and what the operator allows by name.

A target is judged by the addresses its host resolves to, never by how the host is spelled:
``127.1``, ``2130706433``, ``0x7f000001``, ``[::ffff:127.0.0.1]`` and ``localhost.`` all
resolve to the loopback, so one rule refuses every spelling (OWASP's SSRF prevention:
resolve, refuse what is not public, connect to the address that was checked). Every
address the host has must pass, so a name with one public and one private address is
refused too. The check runs when a subscription is made and again before every attempt;
the attempt connects to the address this check returned (``Target.address``), so a DNS
answer that changes in between (rebinding) cannot move the connection. Pure, apart from
the resolver it is given (``within``: one with a deadline).

Public means ``ipaddress``'s ``is_global`` and not multicast, and, for an IPv6 address that
carries an IPv4 one (mapped, compatible, 6to4, Teredo, NAT64), the IPv4 one public too:
``is_global`` alone calls ``[::127.0.0.1]``, ``[64:ff9b::7f00:1]`` and ``224.0.0.1`` global.
"""

from __future__ import annotations

import ipaddress
import queue
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
# One message for every refusal: which internal address a name has, or whether it resolves
# at all, is what an attacker probing the server's network wants to learn.
REFUSED = ("must name a host whose every address is public (an operator may allow internal "
           "receivers with HCP_WEBHOOK_ALLOWED_TARGETS)")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix: the IPv4 address is the last 32 bits
LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")  # a site's own translator (RFC 8215): never public


class TargetRefused(ValueError):
    """The target is not public and not allowed; the reason is for the server's log only."""


@dataclass(frozen=True)
class Target:
    """A checked target: connect to ``address``; say ``host`` (Host header, TLS name)."""

    scheme: str
    host: str
    port: int
    address: Address
    path: str

    @property
    def netloc(self) -> str:
        """The Host header's value: the name as written, the port when not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def pinned_url(self) -> str:
        """The URL with the checked address in place of the host."""
        address = f"[{self.address}]" if self.address.version == 6 else str(self.address)
        return f"{self.scheme}://{address}:{self.port}{self.path}"


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` has, as the operating system resolves it."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in found]


def within(timeout_s: float, resolve: Resolver = system_resolver) -> Resolver:
    """``resolve`` with a deadline: it runs on a thread of its own, abandoned when slower
    than ``timeout_s`` (it ends when the system's resolver gives up), so a name whose DNS
    server stalls on purpose holds its caller no longer than that."""
    def resolve_within(host: str, port: int) -> list[str]:
        box: queue.SimpleQueue[tuple[list[str], None] | tuple[None, Exception]] = queue.SimpleQueue()

        def work() -> None:
            try:
                box.put((resolve(host, port), None))
            except Exception as exc:  # noqa: BLE001 (handed to the caller)
                box.put((None, exc))

        threading.Thread(target=work, name="hcp-webhook-resolve", daemon=True).start()
        try:
            found, error = box.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(f"{host} did not resolve within {timeout_s} s") from None
        if error is not None:
            raise error
        assert found is not None
        return found

    return resolve_within


def is_public(address: Address) -> bool:
    if address.is_multicast or not address.is_global or address in LOCAL_NAT64:
        return False
    return all(is_public(inner) for inner in _embedded_ipv4(address))


def _embedded_ipv4(address: Address) -> list[Address]:
    if address.version == 4:
        return []
    assert isinstance(address, ipaddress.IPv6Address)
    found: list[Address] = []
    if address.ipv4_mapped:
        found.append(address.ipv4_mapped)
    if address.sixtofour:
        found.append(address.sixtofour)
    if address.teredo:
        found.extend(address.teredo)
    if address in IPV4_COMPATIBLE or address in NAT64:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


@dataclass(frozen=True)
class TargetPolicy:
    """Public addresses, plus the operator's allowed networks and host names."""

    networks: tuple[Network, ...] = ()
    hosts: frozenset[str] = frozenset()
    resolve: Resolver = system_resolver

    @classmethod
    def allowing(cls, entries: Iterable[str], resolve: Resolver = system_resolver) -> TargetPolicy:
        networks, hosts = parse_allowlist(entries)
        return cls(networks, hosts, resolve)

    def check(self, url: str) -> Target:
        """The target ``url`` names, with the one address to connect to.

        Raises:
            TargetRefused: not http(s), no host, does not resolve, or an address is neither
                public nor allowed.
        """
        parts = urlsplit(url)
        try:
            host, port = parts.hostname, parts.port
        except ValueError as exc:  # a port out of range or not a number
            raise TargetRefused(str(exc)) from None
        if parts.scheme not in ("http", "https") or not host:
            raise TargetRefused("not an absolute http(s) URL")
        port = port or (443 if parts.scheme == "https" else 80)
        host = _ascii(host)
        addresses = self._addresses(host, port)
        named = normal_host(host) in self.hosts
        refused = [a for a in addresses if not (named or is_public(a) or self._allowed(a))]
        if refused:
            raise TargetRefused(f"{host} resolves to {', '.join(map(str, refused))}")
        path = parts.path or "/"
        return Target(parts.scheme, host, port, addresses[0],
                      f"{path}?{parts.query}" if parts.query else path)

    def _addresses(self, host: str, port: int) -> list[Address]:
        try:
            found = [ipaddress.ip_address(a.split("%")[0]) for a in self.resolve(host, port)]
        except (OSError, UnicodeError, ValueError) as exc:
            raise TargetRefused(f"{host} does not resolve: {exc}") from None
        if not found:
            raise TargetRefused(f"{host} has no address")
        return found

    def _allowed(self, address: Address) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)


def _ascii(host: str) -> str:
    """The host as DNS and the Host header spell it (IDNA for a name that is not ASCII)."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise TargetRefused(f"{host!r} is not a host name") from None


def normal_host(host: str) -> str:
    """A host name as the allowlist compares it: lower case, no root dot."""
    return host.lower().rstrip(".")


def parse_allowlist(entries: Iterable[str]) -> tuple[tuple[Network, ...], frozenset[str]]:
    """Networks (``10.1.2.0/24``, ``fd00::5``) and host names (``hooks.internal``).

    Raises:
        ValueError: an entry that is neither (a URL, a port, a wildcard), naming it.
    """
    networks: list[Network] = []
    hosts: set[str] = set()
    for entry in (e.strip() for e in entries):
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        name = normal_host(entry)
        if not name or not all(label and label.replace("-", "").isalnum() for label in name.split(".")):
            raise ValueError(f"{entry!r} is neither a network (10.0.0.0/8, fd00::1) nor a host name")
        hosts.add(name)
    return tuple(networks), frozenset(hosts)
