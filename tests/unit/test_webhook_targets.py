"""Which webhook targets are refused: by the addresses a host resolves to (a table of
resolver answers, no network), the allowlist's entries, and the setting that holds them."""

from __future__ import annotations

import ipaddress
import time

import pytest

from hcp.settings import Settings
from integrations.webhooks.targets import TargetPolicy, TargetRefused, is_public, parse_allowlist, within

NOT_PUBLIC = ["127.0.0.1", "127.255.255.254", "::1", "0.0.0.0", "::", "10.1.2.3", "172.31.0.1",
              "192.168.1.1", "169.254.169.254", "100.64.0.1", "100.127.255.254", "fc00::1",
              "fd00:ec2::254", "fe80::1", "224.0.0.251", "239.255.255.250", "ff02::1", "ff0e::1",
              "255.255.255.255", "240.0.0.1", "198.18.0.1", "192.0.2.1", "2001:db8::1",
              "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "::10.0.0.1",
              "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b:1::8.8.8.8", "2002:7f00:1::1",
              "2002:a00:1::", "2001:0:4136:e378:8000:63bf:80ff:fffe"]
PUBLIC = ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
          "64:ff9b::808:808", "2002:808:808::1"]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_not_public(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


def answering(*addresses: str) -> TargetPolicy:
    return TargetPolicy(resolve=lambda host, port: list(addresses))


def test_every_address_of_a_name_must_pass() -> None:
    with pytest.raises(TargetRefused):
        answering("93.184.215.14", "10.0.0.1").check("https://twofaced.example/")
    target = answering("93.184.215.14").check("https://hooks.example:8443/in?x=1")
    assert (str(target.address), target.port, target.path) == ("93.184.215.14", 8443, "/in?x=1")
    assert target.pinned_url == "https://93.184.215.14:8443/in?x=1"
    assert target.netloc == "hooks.example:8443"


def test_a_name_that_is_not_ascii_is_asked_and_sent_as_idna() -> None:
    asked: list[str] = []
    policy = TargetPolicy(resolve=lambda host, port: asked.append(host) or ["93.184.215.14"])
    assert policy.check("http://bücher.example/").netloc == "xn--bcher-kva.example"
    assert asked == ["xn--bcher-kva.example"]


def test_an_ipv6_target_is_pinned_in_brackets() -> None:
    target = answering("2606:4700:4700::1111").check("http://[2606:4700:4700::1111]/")
    assert target.pinned_url == "http://[2606:4700:4700::1111]:80/"
    assert target.netloc == "[2606:4700:4700::1111]"


@pytest.mark.parametrize("url", ["ftp://93.184.215.14/", "http:///path", "http://h:99999/",
                                 "http://h:port/", "//93.184.215.14/"])
def test_what_is_not_an_http_target(url: str) -> None:
    with pytest.raises(TargetRefused):
        answering("93.184.215.14").check(url)


def test_a_name_that_does_not_resolve_is_refused() -> None:
    def fails(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(TargetRefused):
        TargetPolicy(resolve=fails).check("http://nowhere.invalid/")


def test_the_allowlist_lets_networks_and_names_through() -> None:
    networks, hosts = parse_allowlist(["10.20.0.0/16", "fd00::5", "[fd00::6]", "Hooks.Internal."])
    policy = TargetPolicy(networks, hosts, lambda host, port: ["10.20.3.4"])
    assert str(policy.check("http://x.example/").address) == "10.20.3.4"
    named = TargetPolicy(networks, hosts, lambda host, port: ["192.168.9.9"])
    assert named.check("http://hooks.internal/").host == "hooks.internal"
    assert named.check("http://HOOKS.internal./").host == "hooks.internal."
    with pytest.raises(TargetRefused):  # the name is allowed, not every name with its address
        named.check("http://other.internal/")
    with pytest.raises(TargetRefused):
        TargetPolicy(networks, hosts, lambda host, port: ["10.21.0.1"]).check("http://x.example/")


@pytest.mark.parametrize("entry", ["http://hooks.internal/", "hooks.internal:8080", "*.internal",
                                   "10.0.0.0/33", "", "a..b"])
def test_an_allowlist_entry_that_is_neither_is_refused_by_the_settings(entry: str) -> None:
    with pytest.raises(ValueError, match="neither a network"):
        Settings(webhook_allowed_targets=[entry])


def test_a_stalled_resolver_is_abandoned_at_its_deadline() -> None:
    def stalls(host: str, port: int) -> list[str]:
        time.sleep(5)
        return ["93.184.215.14"]

    started = time.monotonic()
    with pytest.raises(TargetRefused):
        TargetPolicy(resolve=within(0.3, stalls)).check("http://slow.example/")
    assert time.monotonic() - started < 1.0
