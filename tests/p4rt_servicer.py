"""An in-process P4Runtime gRPC server for controller unit tests (no switch, no root).

As p4runtime-shell's own tests do (``p4runtime_sh/test.py``), it records the
exact requests the controller sends. It also keeps the written table entries
and PRE groups and answers Reads from them, with the P4Runtime error codes a
switch returns (ALREADY_EXISTS on a duplicate INSERT, NOT_FOUND on MODIFY or
DELETE of a missing entry), so the controller's read-diff-write logic runs
against the real protocol. It does not forward packets: data-plane behaviour
is tested against BMv2 (ptf_tests/, tests/test_ptf.py, tests/test_p4_program.py).
"""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Optional

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def _key(te: p4runtime_pb2.TableEntry) -> tuple:
    return (te.table_id, te.is_default_action,
            tuple(sorted(m.SerializeToString() for m in te.match)), te.priority)


class RecordingP4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self):
        self.lock = threading.Lock()
        self.writes: list[p4runtime_pb2.WriteRequest] = []
        self.pipeline: Optional[p4runtime_pb2.ForwardingPipelineConfig] = None
        self.pipeline_pushes = 0
        self.tables: dict[tuple, p4runtime_pb2.TableEntry] = {}
        self.groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self.faults: list[str] = []
        """Faults for the next Writes, one each: ``unavailable``, ``permission_denied`` (not
        primary) or ``stall`` (no answer until ``release`` is set, at most ``stall_s``, then
        UNAVAILABLE); none is applied."""
        self.stall_s = 1.0
        self.release = threading.Event()
        """Set by a test to end a stalled Write at once (after the client has given up), so a
        stall costs the client's timeout and never depends on how fast the machine is."""

    # -- test helpers --------------------------------------------------------------

    def updates(self) -> list[p4runtime_pb2.Update]:
        return [u for w in self.writes for u in w.updates]

    def clear_records(self) -> None:
        self.writes.clear()

    def restart(self) -> None:
        """What a switch restart looks like to a controller: no pipeline, no state."""
        with self.lock:
            self.pipeline = None
            self.tables.clear()
            self.groups.clear()

    # -- RPCs ----------------------------------------------------------------------

    def StreamChannel(self, request_iterator, context):
        for req in request_iterator:
            if req.HasField("arbitration"):
                rep = p4runtime_pb2.StreamMessageResponse()
                rep.arbitration.CopyFrom(req.arbitration)
                rep.arbitration.status.code = code_pb2.OK
                yield rep

    def SetForwardingPipelineConfig(self, request, context):
        with self.lock:
            self.pipeline = request.config
            self.pipeline_pushes += 1
            self.tables.clear()
            self.groups.clear()
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        rep = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        with self.lock:
            if self.pipeline is None:  # as simple_switch_grpc answers a fresh or restarted switch
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "No forwarding pipeline config set for this device")
            rep.config.p4info.CopyFrom(self.pipeline.p4info)
        return rep

    def Write(self, request, context):
        fault = self.faults.pop(0) if self.faults else None
        if fault == "stall":
            self.release.wait(self.stall_s)
        if fault in ("unavailable", "stall"):
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected: switch unavailable")
        if fault == "permission_denied":
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "injected: not primary")
        with self.lock:
            self.writes.append(request)
            errors = [self._apply(u) for u in request.updates]
        if any(e.canonical_code != code_pb2.OK for e in errors):
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message="write error")
            for e in errors:
                a = AnyProto()
                a.Pack(e)
                status.details.append(a)
            context.abort_with_status(_rich_status(status))
        return p4runtime_pb2.WriteResponse()

    def _apply(self, u: p4runtime_pb2.Update) -> p4runtime_pb2.Error:
        ok = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
        ent = u.entity
        if ent.HasField("table_entry"):
            te = ent.table_entry
            k = _key(te)
            if te.is_default_action:
                if u.type != p4runtime_pb2.Update.MODIFY:
                    return p4runtime_pb2.Error(canonical_code=code_pb2.INVALID_ARGUMENT,
                                               message="default entries can only be modified")
                self.tables[k] = te
                return ok
            return self._put(self.tables, k, te, u.type)
        if ent.HasField("packet_replication_engine_entry"):
            g = ent.packet_replication_engine_entry.multicast_group_entry
            return self._put(self.groups, g.multicast_group_id, g, u.type)
        return p4runtime_pb2.Error(canonical_code=code_pb2.UNIMPLEMENTED, message="entity not supported")

    @staticmethod
    def _put(store: dict, k, v, kind) -> p4runtime_pb2.Error:
        if kind == p4runtime_pb2.Update.INSERT:
            if k in store:
                return p4runtime_pb2.Error(canonical_code=code_pb2.ALREADY_EXISTS, message="entry exists")
            store[k] = v
        elif kind == p4runtime_pb2.Update.MODIFY:
            if k not in store:
                return p4runtime_pb2.Error(canonical_code=code_pb2.NOT_FOUND, message="no such entry")
            store[k] = v
        else:
            if k not in store:
                return p4runtime_pb2.Error(canonical_code=code_pb2.NOT_FOUND, message="no such entry")
            del store[k]
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)

    def Read(self, request, context):
        rep = p4runtime_pb2.ReadResponse()
        with self.lock:
            for ent in request.entities:
                if ent.HasField("table_entry"):
                    want = ent.table_entry
                    for te in self.tables.values():
                        if te.table_id != want.table_id:
                            continue
                        if want.is_default_action != te.is_default_action:
                            continue
                        rep.entities.add().table_entry.CopyFrom(te)
                elif ent.HasField("packet_replication_engine_entry"):
                    gid = ent.packet_replication_engine_entry.multicast_group_entry.multicast_group_id
                    if gid in self.groups:
                        rep.entities.add().packet_replication_engine_entry.multicast_group_entry.CopyFrom(
                            self.groups[gid])
                elif ent.HasField("counter_entry"):
                    size = self._counter_size(ent.counter_entry.counter_id)
                    idx = [ent.counter_entry.index.index] if ent.counter_entry.HasField("index") else range(size)
                    for i in idx:
                        c = rep.entities.add().counter_entry
                        c.counter_id = ent.counter_entry.counter_id
                        c.index.index = i
        yield rep

    def _counter_size(self, counter_id: int) -> int:
        if self.pipeline is None:
            return 0
        for c in self.pipeline.p4info.counters:
            if c.preamble.id == counter_id:
                return c.size
        return 0


class _Status(grpc.Status):
    def __init__(self, code, details, trailing_metadata):
        self.code, self.details, self.trailing_metadata = code, details, trailing_metadata


def _rich_status(status: status_pb2.Status) -> grpc.Status:
    """A gRPC status carrying google.rpc.Status details, as P4Runtime servers send
    per-update errors (what grpcio-status's rpc_status.to_status builds)."""
    return _Status(grpc.StatusCode.UNKNOWN, status.message,
                   (("grpc-status-details-bin", status.SerializeToString()),))


class FakeSwitchServer:
    """Start the servicer on a free localhost port (context manager)."""

    def __init__(self):
        self.servicer = RecordingP4RuntimeServicer()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.servicer, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> "FakeSwitchServer":
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop(grace=None)


class RecordingTM:
    """Stands in for the BMv2 Thrift traffic-manager client (queue rate/depth, PRE clear),
    recording the calls; P4Runtime goes to :class:`FakeSwitchServer`."""

    def __init__(self, *a, **kw):
        self.calls = []

    def set_queue_rate(self, pps, port=None):
        self.calls.append(("rate", pps, port))

    def set_queue_depth(self, packets, port=None):
        self.calls.append(("depth", packets, port))

    def clear_pre(self):
        self.calls.append(("clear_pre",))
        return 0
