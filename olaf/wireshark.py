"""A Wireshark dissector (Lua) for the Olaf update and ACK, rendered from the scapy layers.

The field list is not written twice: :func:`layout` walks the ``fields_desc`` of
:class:`olaf.wire.OlafUpdate` and :class:`olaf.wire.OlafAck` (names, bit widths,
signedness) and computes each field's offset; the ports, version, message types, header
lengths and flag bits come from :mod:`olaf.constants`, the fixed-point formats from
:mod:`olaf.fixedpoint`, the queue-status fields from :class:`olaf.wire.QueueStatus`.
:func:`render_lua` turns that into one Lua plugin (tested with Wireshark 4.0, Debian 12; it
avoids Lua 5.3's bit operators, so Wireshark's Lua 5.1/5.2 and 5.3/5.4 both load it) that:

* registers protocol ``olaf`` in the ``udp.port`` table for :data:`UPDATE_PORT` and
  :data:`ACK_PORT` and picks the message by the UDP **destination** port (an ACK leaves
  the PS from port 50100, so matching on either port alone would misread it);
* shows every header field as a ``ProtoField`` of its wire width (``olaf.<name>``), the
  flags with their named bits (``olaf.flags.init``, ``olaf.flags.status_valid``),
  ``reward_sum`` / ``global_reward`` also as Q15.16 decimals (``olaf.<name>.value``;
  ``global_reward`` = INT32_MIN as −∞), ``gen_ts`` in ns and as UTC time, the queue
  status of an ACK, and the elements as Q7.24 decimals (``olaf.grads.value``,
  ``olaf.weights.value``) under their count;
* raises expert infos (group *Malformed*, severity *Error*) by the rules of
  docs/protocol.md "Versioning and malformed messages": ``olaf.malformed.short``,
  ``olaf.malformed.length``, ``olaf.malformed.version``, ``olaf.malformed.msg_type``
  (type does not match the port), ``olaf.malformed.count`` (update with count 0),
  ``olaf.malformed.chunk`` (``chunk`` not below ``num_chunks``); and a
  warning ``olaf.reserved_flags`` for reserved flag bits that are set.

Wireshark has no way to load a scapy layer, and no library renders Lua dissectors from
one, so this module writes the Lua itself; ``tests/test_wireshark.py`` checks the doc's
field tables against :func:`layout` and runs the rendered dissector in ``tshark``.

``olaf wireshark`` writes the plugin (stdout, ``--out FILE``, or ``--install`` into the
personal plugin folder); ``olaf codegen`` keeps the committed copy
``docs/wireshark/olaf.lua`` in step (docs/protocol.md "Wireshark").
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import click
from scapy.fields import BitEnumField, FieldLenField, FieldListField, FlagsField
from scapy.packet import Packet

from olaf import constants
from olaf.constants import (
    ACK_HEADER_LEN,
    ACK_PORT,
    MSG_ACK,
    MSG_UPDATE,
    PROTOCOL_VERSION,
    UPDATE_HEADER_LEN,
    UPDATE_PORT,
)
from olaf.fixedpoint import GRAD_FRAC_BITS, INT32_MIN, REWARD_FRAC_BITS
from olaf.wire import OlafAck, OlafUpdate, QueueStatus

LUA_TEMPLATE = "olaf.lua.in"
"""The dissector's Lua body (package data ``olaf/templates/olaf.lua.in``): ``@BANNER@`` and ``@DATA@`` (the
field and message tables rendered from :mod:`olaf.wire`) are filled in by :func:`render_lua`."""
PLUGIN_DIR = Path("~/.local/lib/wireshark/plugins")
"""Wireshark's personal plugin folder on Linux/macOS (Help → About → Folders → Personal Lua Plugins)."""

FIXED_POINT: dict[str, int] = {
    "reward_sum": REWARD_FRAC_BITS,
    "global_reward": REWARD_FRAC_BITS,
    "grads": GRAD_FRAC_BITS,
    "weights": GRAD_FRAC_BITS,
}
"""Fractional bits of each fixed-point field (int32 two's complement; docs/protocol.md "Fixed-point formats")."""

NANOSECONDS = ("gen_ts",)
"""Fields in ns since the epoch of the clock shared by workers and PS (docs/protocol.md)."""

MINUS_INFINITY = {"global_reward": INT32_MIN}
"""Raw values that stand for −∞: an ACK sent before any INIT (docs/protocol.md "Update")."""

INFO_FIELDS = ("cluster_id", "worker_id", "seq", "count")
"""Header fields summarised in the Info column, in this order."""

_RESERVED_FLAG = re.compile(r"r\d+$")
"""Scapy names of reserved flag bits in :mod:`olaf.wire` (``r1`` … ``r7``)."""

_BLURBS = {
    "version": f"protocol version; receivers accept only {PROTOCOL_VERSION}",
    "msg_type": "message type; must match the UDP destination port",
    "flags": "flag bits; unnamed bits are reserved and 0",
    "num_grads": "number of gradient elements G",
    "num_weights": "number of weight elements W (the slice's length)",
    "chunk": "index of the model slice carried, 0..num_chunks-1",
    "num_chunks": "K: chunks per update of the deployment",
    "cluster_id": "cluster index (an update's is stamped by the switch)",
    "worker_id": "worker index (an update's is stamped by the switch)",
    "seq": "per-worker sequence number, wraps",
    "count": "worker updates folded into this one (1 from a worker)",
    "reward_sum": "sum of the folded updates' mean episode rewards, Q15.16 raw",
    "global_reward": "the PS's global reward after the answered update, Q15.16 raw (INT32_MIN: -inf)",
    "gen_ts": "generation time of the freshest folded update, ns",
    "queue_util": "Q_n: occupied queue capacity in updates, ceil(segments / K) (written by an Olaf switch)",
    "active_clusters": "N: clusters with an update within the activity window (written by an Olaf switch)",
    "queue_size": "Q_max: queue size in updates, floor(segments / K) (written by an Olaf switch)",
    "grads": "gradient elements, Q7.24",
    "weights": "global model weights, Q7.24",
}
"""One-line descriptions shown in Wireshark's status bar; every field of the layers needs one."""


@dataclass(frozen=True)
class WireField:
    """One field of an Olaf message as it sits on the wire.

    Attributes:
        name: the scapy field name (= the name in docs/protocol.md and ``olaf.<name>``).
        offset_bits: bit offset from the first byte of the Olaf message (the UDP payload).
        bits: width in bits; for the element array, the width of one element.
        signed: two's complement (``reward_sum``, ``global_reward``, the elements).
        kind: ``"uint"``, ``"int"``, ``"enum"``, ``"flags"`` or ``"elements"`` (the trailing array).
        enum: value → name of an enum field (``msg_type``).
        flags: bit name → mask of the named flag bits (reserved bits left out).
        count_field: for ``"elements"``, the header field that holds the element count.
    """

    name: str
    offset_bits: int
    bits: int
    signed: bool = False
    kind: str = "uint"
    enum: dict[int, str] = dataclasses.field(default_factory=dict)
    flags: dict[str, int] = dataclasses.field(default_factory=dict)
    count_field: str | None = None

    @property
    def offset(self) -> int:
        """Byte offset of the byte holding the field's first bit."""
        return self.offset_bits // 8

    @property
    def nbytes(self) -> int:
        """Bytes spanned by the field (one element for ``"elements"``)."""
        return (self.offset_bits % 8 + self.bits + 7) // 8

    @property
    def mask(self) -> int | None:
        """Bit mask within its bytes of a field narrower than a byte (the nibbles), else None."""
        if self.bits % 8 == 0 and self.offset_bits % 8 == 0:
            return None
        shift = self.nbytes * 8 - self.offset_bits % 8 - self.bits
        return ((1 << self.bits) - 1) << shift


def layout(layer: type[Packet]) -> tuple[WireField, ...]:
    """The wire layout of a scapy layer of :mod:`olaf.wire`, offsets computed from the widths.

    Raises:
        TypeError: a field type this generator does not know (teach :func:`layout` about it).
        ValueError: an element array not at the end, or without a count field.
    """
    out: list[WireField] = []
    bit = 0
    count_of = {f.count_of: f.name for f in layer.fields_desc if isinstance(f, FieldLenField)}
    fields = layer.fields_desc
    for i, f in enumerate(fields):
        if isinstance(f, FieldListField):
            if i != len(fields) - 1 or f.name not in count_of:
                raise ValueError(f"{layer.__name__}.{f.name}: the element array must be last and counted by a field")
            out.append(WireField(f.name, bit, int(f.field.sz * 8), _signed(f.field), "elements",
                                 count_field=count_of[f.name]))
            continue
        size = getattr(f, "size", None)   # the BitField family: width in bits
        if isinstance(f, FlagsField):
            flags = {n: 1 << k for k, n in enumerate(f.names) if not _RESERVED_FLAG.match(n)}
            out.append(WireField(f.name, bit, f.size, kind="flags", flags=flags))
        elif isinstance(f, BitEnumField):
            out.append(WireField(f.name, bit, f.size, kind="enum", enum=dict(f.i2s or {})))
        elif isinstance(size, int):
            out.append(WireField(f.name, bit, size))
        elif hasattr(f, "sz") and f.fmt.startswith("!"):   # struct fields: width in bytes
            signed = _signed(f)
            out.append(WireField(f.name, bit, int(f.sz * 8), signed, "int" if signed else "uint"))
        else:
            raise TypeError(f"{layer.__name__}.{f.name}: no Wireshark mapping for {type(f).__name__}")
        bit += out[-1].bits
    return tuple(out)


def _signed(f) -> bool:
    return f.fmt[-1] in "bhilq"


@dataclass(frozen=True)
class Message:
    """One Olaf message type and where its numbers come from.

    Attributes:
        name: ``"update"`` or ``"ack"``.
        layer: its scapy layer.
        msg_type: ``msg_type`` value (:data:`MSG_UPDATE`, :data:`MSG_ACK`).
        port: UDP destination port.
        header_len: bytes before the elements.
        flag_prefix: prefix of its flag constants in :mod:`olaf.constants` (``UPDATE_FLAG_INIT``).
        nonzero: header fields that make the message malformed when 0.
        status: header fields valid only with the flag ``status_flag`` (the queue status).
    """

    name: str
    layer: type[Packet]
    msg_type: int
    port: int
    header_len: int
    flag_prefix: str
    nonzero: tuple[str, ...] = ()
    status: tuple[str, ...] = ()
    status_flag: str | None = None


MESSAGES = (
    Message("update", OlafUpdate, MSG_UPDATE, UPDATE_PORT, UPDATE_HEADER_LEN, "UPDATE", nonzero=("count",)),
    Message("ack", OlafAck, MSG_ACK, ACK_PORT, ACK_HEADER_LEN, "ACK",
            status=tuple(f.name for f in dataclasses.fields(QueueStatus)), status_flag="status_valid"),
)
"""The two messages of docs/protocol.md."""


def checked_layout(m: Message) -> tuple[WireField, ...]:
    """:func:`layout` of ``m.layer``, checked against :mod:`olaf.constants`.

    Raises:
        ValueError: header length, ``msg_type`` default, flag masks or status fields that
            disagree with :mod:`olaf.constants` / :class:`~olaf.wire.QueueStatus`.
    """
    fields = layout(m.layer)
    by_name = {f.name: f for f in fields}
    elements = fields[-1]
    if elements.kind != "elements" or elements.offset_bits != 8 * m.header_len:
        raise ValueError(f"{m.layer.__name__}: header is {elements.offset_bits / 8} bytes, "
                         f"olaf.constants says {m.header_len}")
    if m.layer().msg_type != m.msg_type:
        raise ValueError(f"{m.layer.__name__}.msg_type defaults to {m.layer().msg_type}, expected {m.msg_type}")
    for name, mask in by_name["flags"].flags.items():
        const = f"{m.flag_prefix}_FLAG_{name.upper()}"
        if getattr(constants, const, None) != mask:
            raise ValueError(f"{m.layer.__name__} flag {name!r} is bit mask {mask:#04x}; "
                             f"olaf.constants.{const} = {getattr(constants, const, None)}")
    for name in (*m.status, *m.nonzero, *INFO_FIELDS):
        if name not in by_name:
            raise ValueError(f"{m.layer.__name__} has no field {name!r}")
    if m.status_flag is not None and m.status_flag not in by_name["flags"].flags:
        raise ValueError(f"{m.layer.__name__} has no flag {m.status_flag!r}")
    return fields


# --- Lua rendering -----------------------------------------------------------------------------

_BANNER = ("Generated from olaf/wire.py and olaf/constants.py by `olaf wireshark` "
           "(copy: `olaf codegen generate`). Do not edit.")


def _lua_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _proto_field(f: WireField) -> str:
    """``ProtoField`` constructor of a header field."""
    abbr, blurb = _lua_str(f"olaf.{f.name}"), _lua_str(_BLURBS[f.name])
    if f.kind == "elements":
        return f"ProtoField.none({abbr}, {_lua_str(f.name)}, {blurb})"
    ftype = f"{'int' if f.signed else 'uint'}{8 * f.nbytes}"
    base = "base.HEX" if f.kind == "flags" else "base.DEC"
    valstr = "nil"
    if f.kind == "enum":
        valstr = "{" + ", ".join(f"[{v}] = {_lua_str(n)}" for v, n in sorted(f.enum.items())) + "}"
    if f.name in NANOSECONDS:
        base, valstr = "NS_BASE", "NS_UNIT"
    mask = f"0x{f.mask:02x}" if f.mask is not None else "nil"
    return f"ProtoField.{ftype}({abbr}, {_lua_str(f.name)}, {base}, {valstr}, {mask}, {blurb})"


def _all_fields() -> dict[str, WireField]:
    """Header fields of both messages by name; a name used by both must have one wire type.

    Raises:
        ValueError: a name with two different widths, signedness or masks, or without a blurb.
    """
    merged: dict[str, WireField] = {}
    for m in MESSAGES:
        for f in checked_layout(m):
            if f.name not in _BLURBS:
                raise ValueError(f"{m.layer.__name__}.{f.name} has no description in olaf.wireshark._BLURBS")
            other = merged.get(f.name)
            if other is None:
                merged[f.name] = f
            elif (other.bits, other.signed, other.mask, other.kind) != (f.bits, f.signed, f.mask, f.kind):
                raise ValueError(f"field {f.name!r} has two wire types: {other} and {f}")
            elif f.kind == "flags":
                merged[f.name] = dataclasses.replace(other, flags={**other.flags, **f.flags})
    return merged


def _field_defs() -> list[str]:
    lines = []
    for name, f in _all_fields().items():
        lines.append(f"F[{_lua_str(name)}] = {_proto_field(f)}")
        if f.kind == "flags":
            for bit, mask in f.flags.items():
                lines.append(f"F[{_lua_str(f'{name}.{bit}')}] = ProtoField.bool({_lua_str(f'olaf.{name}.{bit}')}, "
                             f"{_lua_str(bit.upper())}, {f.bits}, nil, 0x{mask:02x})")
            named = 0
            for mask in f.flags.values():
                named |= mask
            reserved = ((1 << f.bits) - 1) & ~named   # bits no message names
            lines.append(f"F[{_lua_str(f'{name}.reserved')}] = ProtoField.uint{f.bits}("
                         f"{_lua_str(f'olaf.{name}.reserved')}, \"reserved\", base.HEX, nil, 0x{reserved:02x}, "
                         f"\"reserved flag bits, 0\")")
        if name in FIXED_POINT:
            frac = FIXED_POINT[name]
            q = f"Q{f.bits - 1 - frac}.{frac}"
            lines.append(f"F[{_lua_str(name + '.value')}] = ProtoField.double({_lua_str(f'olaf.{name}.value')}, "
                         f"{_lua_str(name if f.kind == 'elements' else name + ' (' + q + ')')}, "
                         f"{_lua_str(f'{q} value = raw / 2^{frac}')})")
        if name in NANOSECONDS:
            lines.append(f"F[{_lua_str(name + '.time')}] = ProtoField.absolute_time({_lua_str(f'olaf.{name}.time')}, "
                         f"{_lua_str(name + ' (UTC)')}, base.UTC, \"the ns timestamp as a date\")")
    status = [n for m in MESSAGES for n in m.status]
    if status:
        lines.append('F["queue_status"] = ProtoField.none("olaf.queue_status", "queue status (' + ", ".join(status)
                     + ')", "queue status of the path\'s most congested Olaf switch (paper §5)")')
    return lines


def _lua_entry(m: Message, f: WireField) -> str:
    items = [f"name = {_lua_str(f.name)}", f"off = {f.offset}", f"len = {f.nbytes}", f"bits = {f.bits}",
             f"bitoff = {f.offset_bits % 8}", f"signed = {'true' if f.signed else 'false'}"]
    if f.kind == "flags":
        items.append("flags = {" + ", ".join(
            f"{{ key = {_lua_str(f'{f.name}.{b}')}, mask = 0x{mask:02x}, label = {_lua_str(b.upper())} }}"
            for b, mask in f.flags.items()) + "}")
        items.append(f"reserved = {_lua_str(f.name + '.reserved')}")
    if f.name in FIXED_POINT:
        items.append(f"frac = {FIXED_POINT[f.name]}")
    if f.name in MINUS_INFINITY:
        items.append(f"minus_inf = {MINUS_INFINITY[f.name]}")
    if f.name in NANOSECONDS:
        items.append("ns = true")
    if f.name in m.status:
        items.append("status = true")
    return "{ " + ", ".join(items) + " }"


def _messages_table() -> list[str]:
    lines = ["local MESSAGES = {"]
    for m in MESSAGES:
        fields = checked_layout(m)
        header, elements = fields[:-1], fields[-1]
        flags = next(f for f in header if f.kind == "flags")
        lines += [
            f"  [{m.msg_type}] = {{",
            f"    name = {_lua_str(m.name)}, port = {m.port}, header_len = {m.header_len},",
            "    nonzero = {" + ", ".join(_lua_str(n) for n in m.nonzero) + "},",
            f"    status_mask = {flags.flags[m.status_flag] if m.status_flag else 'nil'},",
            f"    elements = {{ name = {_lua_str(elements.name)}, count = {_lua_str(elements.count_field or '')}, "
            f"size = {elements.bits // 8}, frac = {FIXED_POINT[elements.name]} }},",
            "    header = {",
            *(f"      {_lua_entry(m, f)}," for f in header),
            "    },",
            "  },",
        ]
    lines.append("}")
    return lines


def render_lua() -> str:
    """The Lua plugin (``docs/wireshark/olaf.lua``) for the current :mod:`olaf.wire` layers.

    Raises:
        ValueError, TypeError: the layers disagree with :mod:`olaf.constants` or use a field
            type :func:`layout` does not know (see :func:`checked_layout`).
    """
    data = [
        f"local PROTOCOL_VERSION = {PROTOCOL_VERSION}",
        f"local UPDATE_PORT = {UPDATE_PORT}",
        f"local ACK_PORT = {ACK_PORT}",
        "local PORT_MSG = {" + ", ".join(f"[{m.port}] = {m.msg_type}" for m in MESSAGES) + "}",
        "local INFO_FIELDS = {" + ", ".join(_lua_str(n) for n in INFO_FIELDS) + "}",
        "",
        "-- ns fields carry a unit where this Wireshark supports unit strings (3.x and later)",
        "local NS_BASE = base.UNIT_STRING or base.DEC",
        "local NS_UNIT = base.UNIT_STRING and {\" ns\"} or nil",
        "",
        "local F = {}",
        *_field_defs(),
        "",
        *_messages_table(),
    ]
    template = resources.files("olaf.templates").joinpath(LUA_TEMPLATE).read_text()
    return template.replace("@BANNER@", _BANNER).replace("@DATA@", "\n".join(data))




# --- command -------------------------------------------------------------------------------------

@click.command("wireshark")
@click.option("--out", "out", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write the Lua plugin to FILE (default: standard output).")
@click.option("--install", is_flag=True,
              help=f"Install it as {PLUGIN_DIR}/olaf.lua, Wireshark's personal plugin folder.")
def wireshark_cmd(out: Path | None, install: bool) -> None:
    """Write the Wireshark dissector (Lua) for Olaf updates and ACKs on UDP 50100/50101.

    Load it with `wireshark -X lua_script:FILE` or install it; docs/protocol.md "Wireshark".
    """
    if out is not None and install:
        raise click.UsageError("give either --out FILE or --install, not both")
    text = render_lua()
    if install:
        out = PLUGIN_DIR.expanduser() / "olaf.lua"
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    except OSError as e:
        raise click.ClickException(f"cannot write {out}: {e.strerror}; choose another --out") from None
    click.echo(f"wrote {out}")
    if install:
        click.echo("Wireshark loads it at start (or Analyze > Reload Lua Plugins); tshark at every run.")
