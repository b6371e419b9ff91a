"""The RTL's Olaf header layout against its one source (olaf.constants, olaf.wire).

The Verilog keeps its own copies of the update header's byte offsets (Verilog has no
common include path with the generated constants). This test reads every copy in
verilog_queue/rtl and compares it with the Python protocol implementation, so a change of
the wire format fails here until the RTL follows. No simulator needed.
"""

from __future__ import annotations

import re
from pathlib import Path

from olaf.constants import CHUNK_OFFSET, ETH_HEADER_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN, UPDATE_HEADER_LEN
from olaf.update import Update
from olaf.wire import encode_update

RTL_DIR = Path(__file__).resolve().parents[2] / "rtl"


def rtl_values(name: str) -> dict[str, int]:
    """Every ``parameter``/``localparam`` NAME = <int> in the RTL, by file."""
    pattern = re.compile(rf"\b(?:parameter|localparam)\s+{name}\s*=\s*(\d+)\s*[,;\n]")
    found = {}
    for path in sorted(RTL_DIR.glob("*.v")):
        for m in pattern.finditer(path.read_text()):
            found[f"{path.name}:{name}"] = int(m.group(1))
    return found


def wire_offsets() -> dict[str, int]:
    """Offsets in the Olaf update, found by encoding an update with recognisable fields."""
    u = Update(cluster_id=0x0A0B, worker_id=0x0C0D, seq=0x01020304, count=0x1234, reward_sum=0x05060708,
               gen_ts=0x1122334455667788, grads=(0x7E7E7E7E,), chunk=0x0102, num_chunks=0x0203)
    data = encode_update(u)
    chunk = data.find(bytes.fromhex("01020203"))
    count = data.find(bytes.fromhex("1234" "05060708" "1122334455667788"))
    grads = data.find(bytes.fromhex("7e7e7e7e"))
    assert min(chunk, count, grads) >= 0, data.hex()
    return {"CHUNK_OFFSET": chunk, "COUNT_OFFSET": count, "UPDATE_HEADER_LEN": grads}


def test_rtl_header_offsets_match_the_wire_format():
    want = wire_offsets()
    assert want["CHUNK_OFFSET"] == CHUNK_OFFSET and want["UPDATE_HEADER_LEN"] == UPDATE_HEADER_LEN
    want["OLAF_OFFSET"] = ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN
    for name, value in want.items():
        found = rtl_values(name)
        assert found, f"no {name} in {RTL_DIR}"
        wrong = {where: v for where, v in found.items() if v != value}
        assert not wrong, f"{name} is {value} in the wire format; the RTL has {wrong}"

