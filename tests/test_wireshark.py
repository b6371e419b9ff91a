"""The Wireshark dissector (olaf/wireshark.py): docs/protocol.md's field tables agree with
the scapy layers it is rendered from, and tshark decodes a capture with it.

The tshark test needs Debian's ``tshark`` (``sudo make test`` installs it; without it the
test skips and says so). As root, Wireshark ≥ 3.x loads ``-X lua_script:`` (its
``init.lua`` has ``run_user_scripts_when_superuser = true``) and only warns.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from scapy.fields import ShortField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from scapy.utils import wrpcap

from olaf import constants, wire, wireshark
from olaf.cli import main
from olaf.fixedpoint import INT32_MIN, grads_to_fixed, reward_to_fixed
from olaf.queue_model import aggregate
from olaf.update import Update

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "protocol.md"


# --- docs/protocol.md's tables against the scapy layers ---------------------------------------

def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def _table(section: str) -> list[list[str]]:
    """Rows (cells, stripped) of the first Markdown table that starts with ``| offset |``."""
    lines = section.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("| offset |"))
    rows = []
    for ln in lines[first + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip().strip("|").split("|")])
    return rows


def doc_fields(heading: str, text: str | None = None) -> list[dict]:
    """The field table under ``heading`` of docs/protocol.md (or ``text``): name, bit offset,
    width, whether it is the element array, and the "units / format" cell."""
    out: list[dict] = []
    used: dict[int, int] = {}   # bits of each byte offset taken by earlier (sub-byte) rows
    for offset, width, field, fmt, *_ in _table(_section(text or DOC.read_text(), heading)):
        m = re.fullmatch(r"(\d+) bit(?: \((high|low) nibble\))?(?: × ([A-Z]))?", width)
        assert m, f"docs/protocol.md {heading!r}: cannot read width {width!r}"
        byte, bits = int(offset), int(m.group(1))
        bit = byte * 8 + used.get(byte, 0)
        used[byte] = used.get(byte, 0) + bits
        if m.group(2):
            assert (bit % 8 == 0) == (m.group(2) == "high"), f"{field}: {width} at bit {bit}"
        name = re.fullmatch(r"`(\w+)(?:\[[A-Z]\])?`", field)
        assert name, f"docs/protocol.md {heading!r}: cannot read field {field!r}"
        out.append({"name": name.group(1), "offset_bits": bit, "bits": bits, "elements": bool(m.group(3)),
                    "format": fmt})
    return out


@pytest.mark.parametrize("message", wireshark.MESSAGES, ids=lambda m: m.name)
def test_protocol_doc_table_matches_the_scapy_layer(message):
    heading = {"update": "## Update (worker → PS)", "ack": "## ACK (PS → cluster)"}[message.name]
    doc = doc_fields(heading)
    layer = wireshark.checked_layout(message)
    assert [d["name"] for d in doc] == [f.name for f in layer]
    for d, f in zip(doc, layer):
        assert (d["offset_bits"], d["bits"], d["elements"]) == (f.offset_bits, f.bits, f.kind == "elements"), f.name
        q = re.search(r"\bQ(\d+)\.(\d+)\b", d["format"])
        if f.name in wireshark.FIXED_POINT:
            assert q, f"docs/protocol.md gives no Q format for {f.name}"
            assert int(q.group(2)) == wireshark.FIXED_POINT[f.name] and int(q.group(1)) + int(q.group(2)) + 1 == f.bits
            assert f.signed
        else:
            assert q is None, f"{f.name} is fixed point in the doc but not in the dissector"
        assert d["format"].startswith("ns,") == (f.name in wireshark.NANOSECONDS), f.name
        for bit_name, mask in f.flags.items():
            assert f"bit {mask.bit_length() - 1} `{bit_name.upper()}`" in d["format"]
    assert f"`msg_type` | = {message.msg_type} (" in _section(DOC.read_text(), heading)
    elements = layer[-1]
    length = re.search(r"exactly `(\d+) \+ (\d+)·[A-Z]` bytes", _section(DOC.read_text(), heading))
    assert length and (int(length.group(1)), int(length.group(2))) == (message.header_len, elements.bits // 8)


def test_protocol_doc_ports_and_constants():
    text = DOC.read_text()
    transport = _section(text, "## Transport")
    assert f"| update | worker → PS | **{constants.UPDATE_PORT}** |" in transport
    assert f"| ACK | PS → cluster | **{constants.ACK_PORT}** |" in transport
    consts = _section(text, "## Constants")
    for name in ("PROTOCOL_VERSION", "UPDATE_PORT", "ACK_PORT", "UPDATE_HEADER_LEN", "ACK_HEADER_LEN"):
        assert re.search(rf"\| `{name}` \| {getattr(constants, name)}\b", consts), name


def test_the_doc_check_sees_an_edited_table():
    """The doc check can fail: the update table with ``seq`` narrowed to 16 bit reads differently."""
    heading = "## Update (worker → PS)"
    layer = [(f.name, f.offset_bits, f.bits) for f in wireshark.checked_layout(wireshark.MESSAGES[0])]
    as_read = [(d["name"], d["offset_bits"], d["bits"]) for d in doc_fields(heading)]
    assert as_read == layer
    edited = DOC.read_text().replace("| 12 | 32 bit | `seq`", "| 12 | 16 bit | `seq`", 1)
    assert edited != DOC.read_text()
    edited_rows = [(d["name"], d["offset_bits"], d["bits"]) for d in doc_fields(heading, edited)]
    assert [r for r in edited_rows if r not in layer] == [("seq", 96, 16)]


def test_generator_refuses_a_layer_that_disagrees_with_constants():
    class ShortSeqUpdate(Packet):   # seq as 16 bits: the header is 28 bytes, constants say 30
        fields_desc = [ShortField("seq", 0) if f.name == "seq" else f for f in wire.OlafUpdate.fields_desc]

    m = wireshark.Message("update", ShortSeqUpdate, constants.MSG_UPDATE, constants.UPDATE_PORT,
                          constants.UPDATE_HEADER_LEN, "UPDATE", nonzero=("count",))
    with pytest.raises(ValueError, match="header is 28.0 bytes, olaf.constants says 30"):
        wireshark.checked_layout(m)


def test_layout_offsets():
    ack = {f.name: f for f in wireshark.checked_layout(wireshark.MESSAGES[1])}
    assert (ack["msg_type"].offset_bits, ack["msg_type"].mask) == (4, 0x0F)
    assert (ack["chunk"].offset, ack["num_chunks"].offset) == (constants.CHUNK_OFFSET, constants.CHUNK_OFFSET + 2)
    assert (ack["queue_util"].offset, ack["queue_util"].nbytes) == (30, 3)
    assert (ack["queue_size"].offset, ack["weights"].offset) == (35, constants.ACK_HEADER_LEN)
    assert ack["flags"].flags == {"status_valid": constants.ACK_FLAG_STATUS_VALID,
                                  **{f"refused_{r}": m for r, m in constants.ACK_REFUSAL_FLAGS.items()}}


# --- the command ---------------------------------------------------------------------------------

def test_cli_writes_and_installs(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    r = CliRunner().invoke(main, ["wireshark"])
    assert r.exit_code == 0 and r.output == wireshark.render_lua()
    out = tmp_path / "x" / "olaf.lua"
    r = CliRunner().invoke(main, ["wireshark", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text() == wireshark.render_lua()
    r = CliRunner().invoke(main, ["wireshark", "--install"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / ".local/lib/wireshark/plugins/olaf.lua").read_text() == wireshark.render_lua()
    r = CliRunner().invoke(main, ["wireshark", "--install", "--out", str(out)])
    assert r.exit_code == 2 and "either --out FILE or --install" in r.output


# --- tshark with the generated Lua ----------------------------------------------------------------

TSHARK = shutil.which("tshark")
PS, WORKER = "10.0.0.100", "10.0.1.1"


def _frame(payload, *, dport: int, sport: int, src: str = WORKER, dst: str = PS):
    return Ether() / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / payload


def _worker_update(worker_id: int, seq: int, reward: float, gen_ts: int, grads: list[float]) -> Update:
    return Update(cluster_id=3, worker_id=worker_id, seq=seq, count=1, reward_sum=reward_to_fixed(reward),
                  gen_ts=gen_ts, grads=tuple(grads_to_fixed(grads)))


REFUSAL_BYTES = bytes.fromhex(
    "22" "09" "0000" "0000" "0001"   # version 2 / ACK, flags STATUS_VALID | REFUSED_REWARD, no weights, chunk 0 of 1
    "0003" "0008" "00000009" "0001"  # cluster 3, worker 8, seq 9, count 1
    "80000000" "0000000000000005"    # global_reward INT32_MIN, gen_ts 5
    "000002" "0001" "000008")        # queue_util 2, active_clusters 1, queue_size 8
"""A refusal as docs/protocol.md ("ACK", "Refusal") lays it out, by hand: 38 bytes, no weights."""


def _capture() -> tuple[list, dict[str, object]]:
    """Frames (in order) and the values the test expects of them."""
    u1 = _worker_update(7, 42, 1.5, 1_700_000_000_123_456_789, [0.5, -1.25, 2 ** -24])
    u2 = _worker_update(8, 9, -3.0, 1_700_000_000_200_000_000, [0.25, 0.25, 0.0])
    u3 = _worker_update(9, 1, 0.25, 1_700_000_000_100_000_000, [-0.5, 1.0, 127.0])
    agg = aggregate(aggregate(u1, u2), u3)
    init = _worker_update(7, 0, 0.0, 1_699_999_999_000_000_000, [0.125, -0.125, 1.0])
    status = wire.QueueStatus(queue_util=5, active_clusters=2, queue_size=8)
    ack = wire.ack_layer(cluster_id=3, worker_id=7, seq=42, count=3, global_reward=reward_to_fixed(12.5),
                         gen_ts=agg.gen_ts, weights=grads_to_fixed([1.0, -0.75, 0.0]), status=status)
    no_init = wire.ack_layer(cluster_id=3, worker_id=8, seq=9, count=1, global_reward=INT32_MIN,
                             gen_ts=u2.gen_ts, weights=[])
    good = wire.encode_update(u1)
    reserved = bytearray(good)
    reserved[1] = 0x80
    frames = [
        _frame(wire.update_layer(u1), sport=constants.ACK_PORT, dport=constants.UPDATE_PORT),  # 1 update
        _frame(wire.update_layer(agg), sport=constants.ACK_PORT, dport=constants.UPDATE_PORT),  # 2 aggregate
        _frame(wire.update_layer(init, init=True), sport=40000, dport=constants.UPDATE_PORT),  # 3 INIT
        _frame(ack, sport=constants.UPDATE_PORT, dport=constants.ACK_PORT, src=PS, dst=WORKER),  # 4 ACK + status
        _frame(no_init, sport=constants.UPDATE_PORT, dport=constants.ACK_PORT, src=PS, dst=WORKER),  # 5 -inf
        _frame(Raw(good[:20]), sport=40000, dport=constants.UPDATE_PORT),  # 6 short
        _frame(Raw(good + b"\x00\x00"), sport=40000, dport=constants.UPDATE_PORT),  # 7 length
        _frame(Raw(bytes([0x11]) + good[1:]), sport=40000, dport=constants.UPDATE_PORT),  # 8 version 1
        _frame(Raw(good), sport=40000, dport=constants.ACK_PORT, src=PS, dst=WORKER),  # 9 update to the ACK port
        _frame(Raw(good[:16] + b"\x00\x00" + good[18:]), sport=40000, dport=constants.UPDATE_PORT),  # 10 count 0
        _frame(Raw(bytes(reserved)), sport=40000, dport=constants.UPDATE_PORT),  # 11 reserved flag bit
        _frame(Raw(b"not olaf"), sport=constants.ACK_PORT, dport=9999),  # 12 from an Olaf port only
        _frame(wire.update_layer(u1.with_(chunk=2, num_chunks=5)), sport=40000,
               dport=constants.UPDATE_PORT),  # 13 chunk 2 of 5
        _frame(Raw(good[:4] + b"\x00\x05\x00\x05" + good[8:]), sport=40000,
               dport=constants.UPDATE_PORT),  # 14 chunk 5 of 5
        _frame(Raw(REFUSAL_BYTES), sport=constants.UPDATE_PORT, dport=constants.ACK_PORT, src=PS,
               dst=WORKER),  # 15 a refusal (reward) with a switch's status
    ]
    return frames, {"u1": u1, "agg": agg, "init": init, "ack": ack, "status": status}


def _flatten(node, out: dict[str, list], experts: list[tuple[str, str]]) -> None:
    if isinstance(node, list):
        for n in node:
            _flatten(n, out, experts)
        return
    if not isinstance(node, dict):
        return
    if "_ws.expert.message" in node:
        abbr = next(k for k in node if not k.startswith("_ws.expert"))
        experts.append((abbr, node["_ws.expert.message"]))
    for k, v in node.items():
        if isinstance(v, (dict, list)) and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            _flatten(v, out, experts)
            if isinstance(v, dict):
                out.setdefault(k, []).append("")
        else:
            out.setdefault(k, []).extend(v if isinstance(v, list) else [v])


def _tshark(lua: Path, pcap: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    # HOME and the config dir point at an empty folder: a plugin the user installed with
    # `olaf wireshark --install` would otherwise load a second copy of the protocol.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "WIRESHARK_CONFIG_DIR": str(home), "LC_ALL": "C"}
    return subprocess.run([TSHARK, "-X", f"lua_script:{lua}", "-r", str(pcap), *args], capture_output=True,
                          text=True, env=env, timeout=120)


def _lua_refused_as_root() -> bool:
    """True if Wireshark's global init.lua keeps user scripts from running as root."""
    inits = [Path(p) / "init.lua" for p in ("/usr/share/wireshark", "/usr/local/share/wireshark", "/etc/wireshark")]
    return any(re.search(r"^\s*run_user_scripts_when_superuser\s*=\s*false", f.read_text(errors="replace"), re.M)
               for f in inits if f.is_file())


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    if TSHARK is None:
        pytest.skip("tshark is not installed: `sudo apt-get install --no-install-recommends tshark` "
                    "(or `sudo make test`, which installs it)")
    version = subprocess.run([TSHARK, "--version"], capture_output=True, text=True, timeout=60).stdout
    if "without Lua" in version:
        pytest.skip("this tshark is built without Lua")
    d = tmp_path_factory.mktemp("wireshark")
    lua = d / "olaf.lua"
    lua.write_text(wireshark.render_lua())
    frames, expected = _capture()
    wrpcap(str(d / "olaf.pcap"), frames)
    r = _tshark(lua, d / "olaf.pcap", d, "-T", "json", "--no-duplicate-keys")
    assert r.returncode == 0, r.stderr
    assert "Lua" not in r.stderr.replace('Running as user "root"', ""), r.stderr
    if '"olaf"' not in r.stdout and os.geteuid() == 0 and _lua_refused_as_root():
        pytest.skip("this Wireshark's init.lua sets run_user_scripts_when_superuser = false, so it ignores "
                    "-X lua_script as root: run the test as a normal user (docs/protocol.md \"Wireshark\")")
    packets = []
    for p in json.loads(r.stdout):
        layers = p["_source"]["layers"]
        fields: dict[str, list] = {}
        experts: list[tuple[str, str]] = []
        if "olaf" in layers:
            _flatten(layers["olaf"], fields, experts)
        packets.append({"olaf": "olaf" in layers, "f": fields, "experts": experts})
    info = _tshark(lua, d / "olaf.pcap", d, "-T", "fields", "-e", "_ws.col.Info")
    assert info.returncode == 0, info.stderr
    for p, line in zip(packets, info.stdout.splitlines()):
        p["info"] = line
    assert len(packets) == len(frames)
    return packets, expected


def _one(p, name: str) -> str:
    values = p["f"][f"olaf.{name}"]
    assert len(values) == 1, (name, values)
    return values[0]


def _malformed(p) -> list[str]:
    return [abbr for abbr, _ in p["experts"] if abbr.startswith("olaf.malformed")]


def test_tshark_decodes_updates(decoded):
    packets, x = decoded
    for p, u in ((packets[0], x["u1"]), (packets[1], x["agg"])):
        assert _malformed(p) == [] and p["experts"] == []
        for name in ("cluster_id", "worker_id", "seq", "count", "reward_sum", "gen_ts"):
            assert int(_one(p, name)) == getattr(u, name), name
        assert (int(_one(p, "version")), int(_one(p, "msg_type"))) == (2, constants.MSG_UPDATE)
        assert (int(_one(p, "chunk")), int(_one(p, "num_chunks"))) == (0, 1)
        assert int(_one(p, "num_grads")) == len(u.grads) and _one(p, "flags.init") == "0"
        assert float(_one(p, "reward_sum.value")) == u.reward_sum / 2 ** 16
        assert [float(v) for v in p["f"]["olaf.grads.value"]] == pytest.approx([g / 2 ** 24 for g in u.grads],
                                                                               rel=1e-14, abs=0)
    assert _one(packets[0], "gen_ts.time") == "Nov 14, 2023 22:13:20.123456789 UTC"
    agg = x["agg"]
    assert (agg.count, agg.worker_id, agg.seq) == (3, 7, 42)       # the packet that opened the segment
    assert float(_one(packets[1], "reward_sum.value")) == -1.25     # 1.5 - 3.0 + 0.25
    assert _one(packets[1], "gen_ts") == "1700000000200000000"      # the freshest
    assert [float(v) for v in packets[1]["f"]["olaf.grads.value"]] == pytest.approx([0.25, 0.0, 127.0 + 2 ** -24],
                                                                                    rel=1e-13, abs=0)
    assert packets[0]["info"].startswith("update cluster_id=3 worker_id=7 seq=42 count=1 grads=3")


def test_tshark_decodes_init(decoded):
    packets, x = decoded
    p = packets[2]
    assert _one(p, "flags.init") == "1" and _malformed(p) == []
    assert [float(v) for v in p["f"]["olaf.grads.value"]] == [0.125, -0.125, 1.0]
    assert "[INIT]" in p["info"]


def test_tshark_decodes_acks(decoded):
    packets, x = decoded
    p = packets[3]
    assert p["experts"] == []
    assert int(_one(p, "msg_type")) == constants.MSG_ACK and _one(p, "flags.status_valid") == "1"
    st = x["status"]
    assert (int(_one(p, "queue_util")), int(_one(p, "active_clusters")), int(_one(p, "queue_size"))) == (
        st.queue_util, st.active_clusters, st.queue_size)
    assert "olaf.queue_status" in p["f"]
    assert float(_one(p, "global_reward.value")) == 12.5
    assert (int(_one(p, "seq")), int(_one(p, "count")), int(_one(p, "num_weights"))) == (42, 3, 3)
    assert [float(v) for v in p["f"]["olaf.weights.value"]] == [1.0, -0.75, 0.0]
    assert "[STATUS_VALID]" in p["info"]
    q = packets[4]    # before any INIT: no weights, global reward -inf, no switch status
    assert _one(q, "global_reward") == str(INT32_MIN) and _one(q, "global_reward.value") == "-inf"
    assert _one(q, "num_weights") == "0" and _one(q, "flags.status_valid") == "0" and q["experts"] == []


def test_tshark_decodes_a_refusal_built_by_hand(decoded):
    p = decoded[0][14]
    assert p["experts"] == [] and _one(p, "num_weights") == "0"
    assert _one(p, "flags.refused_reward") == "1" and _one(p, "flags.status_valid") == "1"
    assert _one(p, "flags.refused_num_grads") == "0" and "REFUSED_REWARD" in p["info"]


def test_a_refusal_built_by_hand_decodes_and_round_trips():
    a = wire.parse_ack(REFUSAL_BYTES)
    assert (a.refusal, a.weights, a.status) == ("reward", (), wire.QueueStatus(2, 1, 8))
    assert (a.cluster_id, a.worker_id, a.seq, a.count, a.gen_ts, a.global_reward) == (3, 8, 9, 1, 5, INT32_MIN)
    assert wire.encode_ack(cluster_id=3, worker_id=8, seq=9, count=1, global_reward=INT32_MIN, gen_ts=5, weights=b"",
                           status=a.status, refusal="reward") == REFUSAL_BYTES
    assert bytes(wire.ack_layer(cluster_id=3, worker_id=8, seq=9, count=1, global_reward=INT32_MIN, gen_ts=5,
                                weights=[], status=a.status, refusal="reward")) == REFUSAL_BYTES
    two = bytearray(REFUSAL_BYTES)
    two[1] |= constants.ACK_FLAG_REFUSED_GEN_TS
    with pytest.raises(wire.MalformedOlafPacket, match="refusal names 2 reasons"):
        wire.parse_ack(bytes(two))
    heavy = bytearray(REFUSAL_BYTES)
    heavy[2:4] = b"\x00\x01"
    with pytest.raises(wire.MalformedOlafPacket, match=r"refusal \(reward\) carries 1 weights"):
        wire.parse_ack(bytes(heavy) + b"\x00" * 4)
    with pytest.raises(ValueError, match="a refusal carries no weights"):
        wire.encode_ack(cluster_id=3, worker_id=8, seq=9, count=1, global_reward=0, gen_ts=5, weights=[1],
                        refusal="reward")
    with pytest.raises(ValueError, match="refusal='late' must be one of num_grads, num_chunks"):
        wire.encode_ack(cluster_id=3, worker_id=8, seq=9, count=1, global_reward=0, gen_ts=5, weights=b"",
                        refusal="late")


@pytest.mark.parametrize("index, abbr, text", [
    (5, "olaf.malformed.short", "update too short: 20 bytes, the header alone is 30"),
    (6, "olaf.malformed.length", "update length mismatch: 3 elements need 42 bytes, got 44"),
    (7, "olaf.malformed.version", "update has unknown version 1"),
    (8, "olaf.malformed.msg_type", "msg_type 1 (update) sent to UDP port 50101, which expects msg_type 2 (ack)"),
    (9, "olaf.malformed.count", "update has count 0"),
    (13, "olaf.malformed.chunk", "update has chunk 5 of num_chunks 5"),
])
def test_tshark_flags_malformed_messages(decoded, index, abbr, text):
    packets, _ = decoded
    p = packets[index]
    assert _malformed(p) == [abbr]
    assert any(text in msg for a, msg in p["experts"] if a == abbr), p["experts"]
    assert "[Malformed: " in p["info"]


def test_tshark_warns_on_reserved_flags_and_ignores_other_ports(decoded):
    packets, _ = decoded
    p = packets[10]
    assert _malformed(p) == [] and [a for a, _ in p["experts"]] == ["olaf.reserved_flags"]
    assert _one(p, "flags.reserved") == "0x01"    # bit 7 of the byte, shown under the mask 0x80
    assert not packets[11]["olaf"]                  # UDP from port 50101 to 9999 is not an Olaf message


def test_tshark_decodes_chunk_fields(decoded):
    packets, _ = decoded
    p = packets[12]
    assert _malformed(p) == [] and p["experts"] == []
    assert (int(_one(p, "chunk")), int(_one(p, "num_chunks"))) == (2, 5)
