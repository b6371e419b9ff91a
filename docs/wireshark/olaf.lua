-- Wireshark dissector for the Olaf update and ACK (docs/protocol.md).
-- Generated from olaf/wire.py and olaf/constants.py by `olaf wireshark` (copy: `olaf codegen generate`). Do not edit.
--
-- Load it with `wireshark -X lua_script:olaf.lua` / `tshark -X lua_script:olaf.lua`, or put it into
-- the personal plugin folder (`olaf wireshark --install`: ~/.local/lib/wireshark/plugins/).
-- Display filter `olaf`; fields `olaf.<name>` as in docs/protocol.md; `_ws.expert.group == "Malformed"`
-- with `olaf.malformed.*` marks messages a receiver drops.

local olaf = Proto("olaf", "Olaf in-network aggregation")

local PROTOCOL_VERSION = 2
local UPDATE_PORT = 50100
local ACK_PORT = 50101
local PORT_MSG = {[50100] = 1, [50101] = 2}
local INFO_FIELDS = {"cluster_id", "worker_id", "seq", "count"}

-- ns fields carry a unit where this Wireshark supports unit strings (3.x and later)
local NS_BASE = base.UNIT_STRING or base.DEC
local NS_UNIT = base.UNIT_STRING and {" ns"} or nil

local F = {}
F["version"] = ProtoField.uint8("olaf.version", "version", base.DEC, nil, 0xf0, "protocol version; receivers accept only 2")
F["msg_type"] = ProtoField.uint8("olaf.msg_type", "msg_type", base.DEC, {[1] = "update", [2] = "ack"}, 0x0f, "message type; must match the UDP destination port")
F["flags"] = ProtoField.uint8("olaf.flags", "flags", base.HEX, nil, nil, "flag bits; unnamed bits are reserved and 0")
F["flags.init"] = ProtoField.bool("olaf.flags.init", "INIT", 8, nil, 0x01)
F["flags.status_valid"] = ProtoField.bool("olaf.flags.status_valid", "STATUS_VALID", 8, nil, 0x01)
F["flags.refused_num_grads"] = ProtoField.bool("olaf.flags.refused_num_grads", "REFUSED_NUM_GRADS", 8, nil, 0x02)
F["flags.refused_num_chunks"] = ProtoField.bool("olaf.flags.refused_num_chunks", "REFUSED_NUM_CHUNKS", 8, nil, 0x04)
F["flags.refused_reward"] = ProtoField.bool("olaf.flags.refused_reward", "REFUSED_REWARD", 8, nil, 0x08)
F["flags.refused_gen_ts"] = ProtoField.bool("olaf.flags.refused_gen_ts", "REFUSED_GEN_TS", 8, nil, 0x10)
F["flags.refused_no_model"] = ProtoField.bool("olaf.flags.refused_no_model", "REFUSED_NO_MODEL", 8, nil, 0x20)
F["flags.refused_init_source"] = ProtoField.bool("olaf.flags.refused_init_source", "REFUSED_INIT_SOURCE", 8, nil, 0x40)
F["flags.reserved"] = ProtoField.uint8("olaf.flags.reserved", "reserved", base.HEX, nil, 0x80, "reserved flag bits, 0")
F["num_grads"] = ProtoField.uint16("olaf.num_grads", "num_grads", base.DEC, nil, nil, "number of gradient elements G")
F["chunk"] = ProtoField.uint16("olaf.chunk", "chunk", base.DEC, nil, nil, "index of the model slice carried, 0..num_chunks-1")
F["num_chunks"] = ProtoField.uint16("olaf.num_chunks", "num_chunks", base.DEC, nil, nil, "K: chunks per update of the deployment")
F["cluster_id"] = ProtoField.uint16("olaf.cluster_id", "cluster_id", base.DEC, nil, nil, "cluster index (an update's is stamped by the switch)")
F["worker_id"] = ProtoField.uint16("olaf.worker_id", "worker_id", base.DEC, nil, nil, "worker index (an update's is stamped by the switch)")
F["seq"] = ProtoField.uint32("olaf.seq", "seq", base.DEC, nil, nil, "per-worker sequence number, wraps")
F["count"] = ProtoField.uint16("olaf.count", "count", base.DEC, nil, nil, "worker updates folded into this one (1 from a worker)")
F["reward_sum"] = ProtoField.int32("olaf.reward_sum", "reward_sum", base.DEC, nil, nil, "sum of the folded updates' mean episode rewards, Q15.16 raw")
F["reward_sum.value"] = ProtoField.double("olaf.reward_sum.value", "reward_sum (Q15.16)", "Q15.16 value = raw / 2^16")
F["gen_ts"] = ProtoField.uint64("olaf.gen_ts", "gen_ts", NS_BASE, NS_UNIT, nil, "generation time of the freshest folded update, ns")
F["gen_ts.time"] = ProtoField.absolute_time("olaf.gen_ts.time", "gen_ts (UTC)", base.UTC, "the ns timestamp as a date")
F["grads"] = ProtoField.none("olaf.grads", "grads", "gradient elements, Q7.24")
F["grads.value"] = ProtoField.double("olaf.grads.value", "grads", "Q7.24 value = raw / 2^24")
F["num_weights"] = ProtoField.uint16("olaf.num_weights", "num_weights", base.DEC, nil, nil, "number of weight elements W (the slice's length)")
F["global_reward"] = ProtoField.int32("olaf.global_reward", "global_reward", base.DEC, nil, nil, "the PS's global reward after the answered update, Q15.16 raw (INT32_MIN: -inf)")
F["global_reward.value"] = ProtoField.double("olaf.global_reward.value", "global_reward (Q15.16)", "Q15.16 value = raw / 2^16")
F["queue_util"] = ProtoField.uint24("olaf.queue_util", "queue_util", base.DEC, nil, nil, "Q_n: occupied queue capacity in updates, ceil(segments / K) (written by an Olaf switch)")
F["active_clusters"] = ProtoField.uint16("olaf.active_clusters", "active_clusters", base.DEC, nil, nil, "N: clusters with an update within the activity window (written by an Olaf switch)")
F["queue_size"] = ProtoField.uint24("olaf.queue_size", "queue_size", base.DEC, nil, nil, "Q_max: queue size in updates, floor(segments / K) (written by an Olaf switch)")
F["weights"] = ProtoField.none("olaf.weights", "weights", "global model weights, Q7.24")
F["weights.value"] = ProtoField.double("olaf.weights.value", "weights", "Q7.24 value = raw / 2^24")
F["queue_status"] = ProtoField.none("olaf.queue_status", "queue status (queue_util, active_clusters, queue_size)", "queue status of the path's most congested Olaf switch (paper §5)")

local MESSAGES = {
  [1] = {
    name = "update", port = 50100, header_len = 30,
    nonzero = {"count"},
    status_mask = nil,
    elements = { name = "grads", count = "num_grads", size = 4, frac = 24 },
    header = {
      { name = "version", off = 0, len = 1, bits = 4, bitoff = 0, signed = false },
      { name = "msg_type", off = 0, len = 1, bits = 4, bitoff = 4, signed = false },
      { name = "flags", off = 1, len = 1, bits = 8, bitoff = 0, signed = false, flags = {{ key = "flags.init", mask = 0x01, label = "INIT" }}, reserved = "flags.reserved" },
      { name = "num_grads", off = 2, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "chunk", off = 4, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "num_chunks", off = 6, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "cluster_id", off = 8, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "worker_id", off = 10, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "seq", off = 12, len = 4, bits = 32, bitoff = 0, signed = false },
      { name = "count", off = 16, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "reward_sum", off = 18, len = 4, bits = 32, bitoff = 0, signed = true, frac = 16 },
      { name = "gen_ts", off = 22, len = 8, bits = 64, bitoff = 0, signed = false, ns = true },
    },
  },
  [2] = {
    name = "ack", port = 50101, header_len = 38,
    nonzero = {},
    status_mask = 1,
    elements = { name = "weights", count = "num_weights", size = 4, frac = 24 },
    header = {
      { name = "version", off = 0, len = 1, bits = 4, bitoff = 0, signed = false },
      { name = "msg_type", off = 0, len = 1, bits = 4, bitoff = 4, signed = false },
      { name = "flags", off = 1, len = 1, bits = 8, bitoff = 0, signed = false, flags = {{ key = "flags.status_valid", mask = 0x01, label = "STATUS_VALID" }, { key = "flags.refused_num_grads", mask = 0x02, label = "REFUSED_NUM_GRADS" }, { key = "flags.refused_num_chunks", mask = 0x04, label = "REFUSED_NUM_CHUNKS" }, { key = "flags.refused_reward", mask = 0x08, label = "REFUSED_REWARD" }, { key = "flags.refused_gen_ts", mask = 0x10, label = "REFUSED_GEN_TS" }, { key = "flags.refused_no_model", mask = 0x20, label = "REFUSED_NO_MODEL" }, { key = "flags.refused_init_source", mask = 0x40, label = "REFUSED_INIT_SOURCE" }}, reserved = "flags.reserved" },
      { name = "num_weights", off = 2, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "chunk", off = 4, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "num_chunks", off = 6, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "cluster_id", off = 8, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "worker_id", off = 10, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "seq", off = 12, len = 4, bits = 32, bitoff = 0, signed = false },
      { name = "count", off = 16, len = 2, bits = 16, bitoff = 0, signed = false },
      { name = "global_reward", off = 18, len = 4, bits = 32, bitoff = 0, signed = true, frac = 16, minus_inf = -2147483648 },
      { name = "gen_ts", off = 22, len = 8, bits = 64, bitoff = 0, signed = false, ns = true },
      { name = "queue_util", off = 30, len = 3, bits = 24, bitoff = 0, signed = false, status = true },
      { name = "active_clusters", off = 33, len = 2, bits = 16, bitoff = 0, signed = false, status = true },
      { name = "queue_size", off = 35, len = 3, bits = 24, bitoff = 0, signed = false, status = true },
    },
  },
}

local E = {
  short = ProtoExpert.new("olaf.malformed.short", "Malformed Olaf message: shorter than its header",
                          expert.group.MALFORMED, expert.severity.ERROR),
  length = ProtoExpert.new("olaf.malformed.length", "Malformed Olaf message: length is not header + 4 x elements",
                           expert.group.MALFORMED, expert.severity.ERROR),
  version = ProtoExpert.new("olaf.malformed.version", "Malformed Olaf message: unknown version",
                            expert.group.MALFORMED, expert.severity.ERROR),
  msg_type = ProtoExpert.new("olaf.malformed.msg_type", "Malformed Olaf message: msg_type does not match the port",
                             expert.group.MALFORMED, expert.severity.ERROR),
  count = ProtoExpert.new("olaf.malformed.count", "Malformed Olaf message: update with count 0",
                          expert.group.MALFORMED, expert.severity.ERROR),
  chunk = ProtoExpert.new("olaf.malformed.chunk", "Malformed Olaf message: chunk not below num_chunks",
                          expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new("olaf.reserved_flags", "Reserved Olaf flag bits set (sent as 0)",
                             expert.group.PROTOCOL, expert.severity.WARN),
}

local fields = {}
for _, f in pairs(F) do fields[#fields + 1] = f end
olaf.fields = fields
olaf.experts = { E.short, E.length, E.version, E.msg_type, E.count, E.chunk, E.reserved }

local function has_bit(v, mask)
  return math.floor(v / mask) % 2 == 1
end

-- value of a header entry (number, or UInt64 for 64-bit fields)
local function read(tvb, e)
  local r = tvb(e.off, e.len)
  if e.bits % 8 ~= 0 or e.bitoff ~= 0 then return r:bitfield(e.bitoff, e.bits) end
  if e.bits == 64 then return r:uint64() end
  if e.signed then return r:int() end
  return r:uint()
end

local function fixed_value(raw, e)
  if e.minus_inf ~= nil and raw == e.minus_inf then return -math.huge end
  return raw / 2 ^ e.frac
end

local function ns_time(ts)
  local billion = UInt64(1000000000)
  return NSTime((ts / billion):tonumber(), (ts % billion):tonumber())
end

local function add_header_field(tree, tvb, e, v)
  local item = tree:add(F[e.name], tvb(e.off, e.len))
  if e.flags then
    local named = 0
    for _, bit in ipairs(e.flags) do
      item:add(F[bit.key], tvb(e.off, e.len))
      named = named + bit.mask
    end
    local r = item:add(F[e.reserved], tvb(e.off, e.len))
    local reserved_bits = 0
    for k = 0, e.bits - 1 do
      local m = 2 ^ k
      if has_bit(v, m) and not has_bit(named, m) then reserved_bits = reserved_bits + m end
    end
    if reserved_bits ~= 0 then
      r:add_proto_expert_info(E.reserved, string.format("reserved %s bits set: 0x%02x", e.name, reserved_bits))
    end
  end
  if e.frac then
    local value = fixed_value(v, e)
    local vi = item:add(F[e.name .. ".value"], tvb(e.off, e.len), value)
    vi:set_generated()
    if value == -math.huge then vi:append_text(" (the initial global reward: no INIT has reached the PS yet)") end
  end
  if e.ns then
    item:add(F[e.name .. ".time"], tvb(e.off, e.len), ns_time(v)):set_generated()
  end
  return item
end

function olaf.dissector(tvb, pinfo, tree)
  local port_type = PORT_MSG[pinfo.dst_port]
  if port_type == nil then return 0 end   -- matched on the source port only: not an Olaf message
  local length = tvb:reported_len()
  local captured = tvb:len()

  pinfo.cols.protocol = "Olaf"
  local version, msg_type = nil, nil
  if captured >= 1 then
    version, msg_type = tvb(0, 1):bitfield(0, 4), tvb(0, 1):bitfield(4, 4)
  end
  -- the layout: the message its msg_type names, else the one its port expects
  local m = MESSAGES[msg_type] or MESSAGES[port_type]
  local root = tree:add(olaf, tvb(), "Olaf " .. m.name)

  local values = {}
  local status_item = nil
  for _, e in ipairs(m.header) do
    if e.off + e.len > captured then break end
    local v = read(tvb, e)
    values[e.name] = v
    local parent = root
    if e.status then
      if status_item == nil then
        status_item = root:add(F.queue_status, tvb(e.off, m.header_len - e.off))
      end
      parent = status_item
    end
    add_header_field(parent, tvb, e, v)
  end

  local problems = {}
  local function malformed(expert, text)
    root:add_proto_expert_info(expert, text)
    problems[#problems + 1] = text
  end
  if length < m.header_len then
    malformed(E.short, string.format("%s too short: %d bytes, the header alone is %d", m.name, length, m.header_len))
  end
  if version ~= nil and version ~= PROTOCOL_VERSION then
    malformed(E.version, string.format("%s has unknown version %d (this dissector speaks %d)",
                                       m.name, version, PROTOCOL_VERSION))
  end
  if msg_type ~= nil and msg_type ~= port_type then
    malformed(E.msg_type, string.format("msg_type %d (%s) sent to UDP port %d, which expects msg_type %d (%s)",
                                        msg_type, MESSAGES[msg_type] and MESSAGES[msg_type].name or "unknown",
                                        pinfo.dst_port, port_type, MESSAGES[port_type].name))
  end
  local n = values[m.elements.count]
  if length >= m.header_len and n ~= nil then
    local expected = m.header_len + m.elements.size * n
    if length ~= expected then
      malformed(E.length, string.format("%s length mismatch: %d elements need %d bytes, got %d",
                                        m.name, n, expected, length))
    end
  end
  if values.chunk ~= nil and values.num_chunks ~= nil and values.chunk >= values.num_chunks then
    malformed(E.chunk, string.format("%s has chunk %d of num_chunks %d (need chunk < num_chunks)",
                                     m.name, values.chunk, values.num_chunks))
  end
  for _, name in ipairs(m.nonzero) do
    if values[name] == 0 then
      malformed(E.count, string.format("%s has %s 0 (a worker sends 1)", m.name, name))
    end
  end

  if status_item ~= nil and m.status_mask ~= nil and values.flags ~= nil then
    if has_bit(values.flags, m.status_mask) then
      status_item:append_text(": written by an Olaf switch")
    else
      status_item:append_text(": not written by a switch (STATUS_VALID clear)")
    end
  end

  -- the element array, as far as it was captured
  if n ~= nil and length >= m.header_len then
    local size = m.elements.size
    local avail = math.floor((captured - m.header_len) / size)
    local shown = math.min(n, math.max(avail, 0))
    local arr
    if shown > 0 then
      arr = root:add(F[m.elements.name], tvb(m.header_len, shown * size))
    else
      arr = root:add(F[m.elements.name], tvb(0, 0))
    end
    arr:append_text(string.format(": %d elements (Q%d.%d)", n, 8 * size - 1 - m.elements.frac, m.elements.frac))
    for i = 0, shown - 1 do
      local r = tvb(m.header_len + i * size, size)
      local raw = r:int()
      arr:add(F[m.elements.name .. ".value"], r, raw / 2 ^ m.elements.frac)
         :set_text(string.format("%s[%d]: %.9g (raw %d)", m.elements.name, i, raw / 2 ^ m.elements.frac, raw))
    end
  end

  -- Info column: message, the summary fields, INIT / status, problems
  local parts = { m.name }
  for _, name in ipairs(INFO_FIELDS) do
    if values[name] ~= nil then parts[#parts + 1] = name .. "=" .. tostring(values[name]) end
  end
  if n ~= nil then parts[#parts + 1] = m.elements.name .. "=" .. n end
  if values.flags ~= nil then
    for _, e in ipairs(m.header) do
      if e.flags then
        for _, bit in ipairs(e.flags) do
          if has_bit(values.flags, bit.mask) then parts[#parts + 1] = "[" .. bit.label .. "]" end
        end
      end
    end
  end
  if #problems > 0 then parts[#parts + 1] = "[Malformed: " .. table.concat(problems, "; ") .. "]" end
  pinfo.cols.info = table.concat(parts, " ")
  root:append_text(", " .. table.concat(parts, " ", 2))
  return length
end

local udp_port = DissectorTable.get("udp.port")
udp_port:add(UPDATE_PORT, olaf)
udp_port:add(ACK_PORT, olaf)
