"""P4Runtime connection to one switch (grpcio + the p4runtime protos).

One :class:`SwitchConnection` per switch and no module-global state, so a
process can drive several switches (multi-hop topologies). P4Info lookups
(including unambiguous short names) come from p4runtime-shell's ``Context``,
value encoding from its ``bytes_utils``, and per-update write errors from its
``P4RuntimeWriteException`` (P4Runtime spec §12 "Error reporting").

Errors:
    SwitchUnavailable: the gRPC server does not answer or refuses arbitration
        (the switch is down or restarting); :meth:`SwitchConnection.connect`
        can be called again.
    P4RuntimeWriteError: a Write failed; its message lists every failed update.
    ValueError: an unknown table/action/field name or a value that does not
        fit its bit width (raised before anything is written).
"""

from __future__ import annotations

import logging
import queue
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

import google.protobuf.text_format as text_format
import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from p4runtime_sh import bytes_utils
from p4runtime_sh.context import Context, P4Type
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from olaf.controller.entries import Replica

log = logging.getLogger(__name__)

Value = int | str | bytes


class SwitchUnavailable(ConnectionError):
    """The switch's P4Runtime server cannot be reached or refused the session."""


class P4RuntimeWriteError(RuntimeError):
    """A P4Runtime Write failed; ``str()`` lists each failed update and why."""


def encode(value: Value, bitwidth: int) -> bytes:
    """Canonical P4Runtime bytes of ``value`` (int, IPv4/MAC string, or bytes).

    Raises ValueError if it does not fit ``bitwidth`` bits.
    """
    if isinstance(value, bytes):
        raw = value
    else:
        try:
            raw = bytes_utils.parse_value(str(value), bitwidth)
        except Exception as e:  # p4runtime-shell raises its own UserError types
            raise ValueError(f"cannot encode {value!r} in {bitwidth} bits: {e}") from None
    if int.from_bytes(raw, "big") >= (1 << bitwidth):
        raise ValueError(f"{value!r} does not fit in {bitwidth} bits")
    return bytes_utils.to_canonical_bytes(raw)


def decode(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def ip_str(v: int) -> str:
    """A 32-bit IPv4 address as dotted quad."""
    return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))


def mac_str(v: int) -> str:
    """A 48-bit MAC address as ``aa:bb:cc:dd:ee:ff``."""
    return ":".join(f"{(v >> s) & 0xFF:02x}" for s in range(40, -8, -8))


class Pipeline:
    """P4Info of the loaded program, with entity builders by name."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self.ctx = Context()
        self.ctx.set_p4info(p4info)

    @classmethod
    def from_file(cls, path: Path) -> "Pipeline":
        info = p4info_pb2.P4Info()
        text_format.Merge(Path(path).read_text(), info)
        return cls(info)

    def _obj(self, kind: P4Type, name: str):
        obj = self.ctx.get_obj(kind, name)
        if obj is None:
            known = sorted(o.preamble.name for o in self.ctx.get_objs(kind))
            raise ValueError(f"no {kind.name} named {name!r} in the P4Info; known: {', '.join(known)}")
        return obj

    def table_id(self, table: str) -> int:
        return self._obj(P4Type.table, table).preamble.id

    def table_entry(
        self,
        table: str,
        match: Mapping[str, Any],
        action: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        priority: int = 0,
    ) -> p4runtime_pb2.TableEntry:
        """A TableEntry; ``match`` values: exact → value, lpm → (value, prefix_len), ternary →
        (value, mask) (a ternary field left out matches anything; P4Runtime spec §9.1.1: a
        don't-care is omitted). A table with a ternary field needs ``priority`` ≥ 1."""
        t = self._obj(P4Type.table, table)
        entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority)
        fields = {mf.name: mf for mf in t.match_fields}
        for name, value in match.items():
            mf = fields.get(name)
            if mf is None:
                raise ValueError(f"table {table!r} has no match field {name!r}; fields: {', '.join(fields)}")
            fm = entry.match.add(field_id=mf.id)
            if mf.match_type == p4info_pb2.MatchField.EXACT:
                fm.exact.value = encode(value, mf.bitwidth)
            elif mf.match_type == p4info_pb2.MatchField.LPM:
                v, plen = value
                fm.lpm.value = encode(v, mf.bitwidth)
                fm.lpm.prefix_len = int(plen)
            elif mf.match_type == p4info_pb2.MatchField.TERNARY:
                v, mask = value
                fm.ternary.value = encode(int(v) & int(mask), mf.bitwidth)
                fm.ternary.mask = encode(mask, mf.bitwidth)
            else:
                raise ValueError(f"match type of {table}.{name} is not supported")
        if action is not None:
            entry.action.action.CopyFrom(self.action(action, params or {}))
        return entry

    def action(self, name: str, params: Mapping[str, Value]) -> p4runtime_pb2.Action:
        a = self._obj(P4Type.action, name)
        want = {p.name: p for p in a.params}
        if set(params) != set(want):
            raise ValueError(
                f"action {name!r} takes parameters {sorted(want)}, got {sorted(params)}")
        act = p4runtime_pb2.Action(action_id=a.preamble.id)
        for pname, value in params.items():
            p = want[pname]
            act.params.add(param_id=p.id, value=encode(value, p.bitwidth))
        return act

    def counter_entry(self, counter: str, index: Optional[int] = None) -> p4runtime_pb2.CounterEntry:
        c = self._obj(P4Type.counter, counter)
        e = p4runtime_pb2.CounterEntry(counter_id=c.preamble.id)
        if index is not None:
            e.index.index = index
        return e

    def counter_size(self, counter: str) -> int:
        return self._obj(P4Type.counter, counter).size

    def action_name(self, action_id: int) -> str:
        return self.ctx.get_name_from_id(action_id)

    def param_values(self, action: p4runtime_pb2.Action) -> dict[str, int]:
        name = self.action_name(action.action_id)
        return {self.ctx.get_param_name(name, p.param_id): decode(p.value) for p in action.params}

    def match_values(self, entry: p4runtime_pb2.TableEntry) -> dict[str, Any]:
        tname = self.ctx.get_name_from_id(entry.table_id)
        out: dict[str, Any] = {}
        for fm in entry.match:
            name = self.ctx.get_mf_name(tname, fm.field_id)
            if fm.HasField("exact"):
                out[name] = decode(fm.exact.value)
            elif fm.HasField("lpm"):
                out[name] = (decode(fm.lpm.value), fm.lpm.prefix_len)
            elif fm.HasField("ternary"):
                out[name] = (decode(fm.ternary.value), decode(fm.ternary.mask))
        return out


def multicast_group_entry(group_id: int, replicas: Iterable[Replica]) -> p4runtime_pb2.PacketReplicationEngineEntry:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    g = pre.multicast_group_entry
    g.multicast_group_id = group_id
    for r in replicas:
        g.replicas.add(egress_port=r.port, instance=r.rid)
    return pre


class SwitchConnection:
    """A primary P4Runtime session with one switch.

    Args:
        grpc_addr: ``host:port`` of the switch's P4Runtime server.
        device_id: P4Runtime device id (``--device-id`` of simple_switch_grpc).
        election_id: (high, low) election id; the highest connected client is primary.
        name: label used in errors and logs (e.g. ``"s1"``).
        rpc_timeout_s: deadline of every unary call and of a whole Read (s): a stalled
            switch raises SwitchUnavailable instead of hanging the caller.

    Mastership is tracked for the life of the session: if a client with a higher
    election id connects later, the switch tells this one (a stream arbitration
    message) and every later write raises SwitchUnavailable saying so.
    """

    def __init__(self, grpc_addr: str, device_id: int = 0, election_id: tuple[int, int] = (0, 1),
                 name: str = "switch", rpc_timeout_s: float = 10.0):
        self.grpc_addr = grpc_addr
        self.rpc_timeout_s = rpc_timeout_s
        self.primary = False
        self.primary_lost: Optional[str] = None
        self.device_id = device_id
        self.election_id = election_id
        self.name = name
        self.channel: Optional[grpc.Channel] = None
        self.stub: Optional[p4runtime_pb2_grpc.P4RuntimeStub] = None
        self._out: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self._arbitration: "queue.Queue[Any]" = queue.Queue()
        self._reader: Optional[threading.Thread] = None
        self.pipeline: Optional[Pipeline] = None

    # -- session -------------------------------------------------------------------

    def connect(self, timeout_s: float = 10.0) -> None:
        """Open the channel and become primary; raises SwitchUnavailable."""
        self.close()
        self.channel = grpc.insecure_channel(self.grpc_addr)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            self.close()
            raise SwitchUnavailable(
                f"{self.name}: no P4Runtime server at {self.grpc_addr} after {timeout_s:.0f} s") from None
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out = queue.Queue()
        self._arbitration = queue.Queue()
        stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._reader = threading.Thread(target=self._read_stream, args=(stream,), daemon=True,
                                        name=f"p4rt-stream-{self.name}")
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._out.put(req)
        try:
            rep = self._arbitration.get(timeout=timeout_s)
        except queue.Empty:
            rep = None
        if rep is None or isinstance(rep, Exception):
            self.close()
            raise SwitchUnavailable(f"{self.name}: arbitration with {self.grpc_addr} failed: {rep}")
        if rep.arbitration.status.code != 0:
            self.close()
            raise SwitchUnavailable(self._not_primary_message(rep.arbitration))
        self.primary = True
        self.primary_lost = None

    def _not_primary_message(self, arb) -> str:
        mine = tuple(self.election_id)
        other = (arb.election_id.high, arb.election_id.low)
        if other == mine:
            return (f"{self.name}: another client already uses election id {mine} at {self.grpc_addr} "
                    "(a second olafctl? wait until it finishes, or pass a higher --election-id)")
        return (f"{self.name}: not primary at {self.grpc_addr}: a client with the higher election id {other} "
                f"is connected (ours is {mine}); {arb.status.message}")

    def _read_stream(self, stream) -> None:
        try:
            for msg in stream:
                if msg.HasField("arbitration"):
                    if self.primary and msg.arbitration.status.code != 0:
                        self.primary = False
                        self.primary_lost = self._not_primary_message(msg.arbitration)
                    self._arbitration.put(msg)
        except grpc.RpcError as e:
            self._arbitration.put(e)

    def close(self) -> None:
        if self._reader is not None:
            self._out.put(None)
        if self.channel is not None:
            self.channel.close()
        if self._reader is not None:
            self._reader.join(timeout=5)
        self.channel = None
        self.stub = None
        self._reader = None

    @property
    def connected(self) -> bool:
        return self.stub is not None and self._reader is not None and self._reader.is_alive()

    def __enter__(self) -> "SwitchConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self.stub is None:
            raise SwitchUnavailable(f"{self.name}: not connected (call connect())")
        return self.stub

    def _rpc(self, fn, req):
        try:
            return fn(req, timeout=self.rpc_timeout_s)
        except grpc.RpcError as e:
            self._raise_unavailable(e)
            raise

    def _raise_unavailable(self, e: grpc.RpcError) -> None:
        if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise SwitchUnavailable(f"{self.name}: no answer within {self.rpc_timeout_s:g} s (switch stalled?)") from None
        if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
            raise SwitchUnavailable(f"{self.name}: {e.code().name}: {e.details()}") from None
        if e.code() == grpc.StatusCode.PERMISSION_DENIED:
            raise SwitchUnavailable(self.primary_lost or f"{self.name}: PERMISSION_DENIED: {e.details()} "
                                    "(not primary: another controller took over?)") from None

    # -- pipeline ---------------------------------------------------------------------

    def set_pipeline(self, p4info_path: Path, device_config_path: Path) -> Pipeline:
        """Push P4Info + BMv2 JSON (VERIFY_AND_COMMIT); returns the Pipeline."""
        stub = self._require()
        pipeline = Pipeline.from_file(p4info_path)
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(pipeline.p4info)
        req.config.p4_device_config = Path(device_config_path).read_bytes()
        self._rpc(stub.SetForwardingPipelineConfig, req)
        self.pipeline = pipeline
        return pipeline

    def fetch_pipeline(self) -> Pipeline:
        """Read the P4Info of the program the switch runs (for tools attaching later)."""
        stub = self._require()
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            rep = self._rpc(stub.GetForwardingPipelineConfig, req)
        except grpc.RpcError as e:
            # BMv2 answers a switch without a pipeline (fresh or restarted) with FAILED_PRECONDITION
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                raise SwitchUnavailable(f"{self.name}: the switch has no pipeline loaded ({e.details()})") from None
            raise
        if not rep.config.p4info.tables:
            raise SwitchUnavailable(f"{self.name}: the switch has no pipeline loaded")
        self.pipeline = Pipeline(rep.config.p4info)
        return self.pipeline

    def require_pipeline(self) -> Pipeline:
        if self.pipeline is None:
            raise SwitchUnavailable(f"{self.name}: no pipeline (set_pipeline or fetch_pipeline first)")
        return self.pipeline

    # -- write / read -------------------------------------------------------------------

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        """Send one WriteRequest; raises P4RuntimeWriteError listing the failed updates."""
        if not updates:
            return
        stub = self._require()
        if self.primary_lost:
            raise SwitchUnavailable(self.primary_lost)
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = self.election_id
        req.updates.extend(updates)
        try:
            self._rpc(stub.Write, req)
        except SwitchUnavailable:
            raise
        except grpc.RpcError as e:
            try:
                detail = str(P4RuntimeWriteException(e))
            except Exception:
                detail = f"{e.code().name}: {e.details()}"
            raise P4RuntimeWriteError(f"{self.name}: write failed: {detail}") from None

    def update(self, kind: str, entity: Any) -> p4runtime_pb2.Update:
        """Wrap a TableEntry / PacketReplicationEngineEntry in an Update of ``kind``
        (``"insert"``, ``"modify"`` or ``"delete"``)."""
        u = p4runtime_pb2.Update(type=getattr(p4runtime_pb2.Update, kind.upper()))
        if isinstance(entity, p4runtime_pb2.TableEntry):
            u.entity.table_entry.CopyFrom(entity)
        elif isinstance(entity, p4runtime_pb2.PacketReplicationEngineEntry):
            u.entity.packet_replication_engine_entry.CopyFrom(entity)
        else:
            raise TypeError(f"cannot write a {type(entity).__name__}")
        return u

    def read(self, entity: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        stub = self._require()
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().CopyFrom(entity)
        try:
            for rep in stub.Read(req, timeout=self.rpc_timeout_s):
                yield from rep.entities
        except grpc.RpcError as e:
            self._raise_unavailable(e)
            raise

    def read_table(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        e = p4runtime_pb2.Entity()
        e.table_entry.table_id = self.require_pipeline().table_id(table)
        return [x.table_entry for x in self.read(e)]

    def read_counter(self, counter: str, index: Optional[int] = None) -> dict[int, int]:
        """Packet counts by index (all indices when ``index`` is None)."""
        e = p4runtime_pb2.Entity()
        e.counter_entry.CopyFrom(self.require_pipeline().counter_entry(counter, index))
        return {x.counter_entry.index.index: x.counter_entry.data.packet_count for x in self.read(e)}

    def read_multicast_group(self, group_id: int) -> Optional[list[Replica]]:
        e = p4runtime_pb2.Entity()
        e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = group_id
        try:
            for x in self.read(e):
                g = x.packet_replication_engine_entry.multicast_group_entry
                return [Replica(r.egress_port, r.instance) for r in g.replicas]
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise
        return None
