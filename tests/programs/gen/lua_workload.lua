-- A deterministic allocation-heavy Lua workload (tests/programs, bench/programs.sh).
--
--   lua5.4 lua_workload.lua [SCALE]      (default 1)
--
-- What a game's or an editor's scripting layer does to the heap: tables of entities created and
-- replaced, closures, strings built by concatenation and string.format, buffers grown by
-- table.concat and string.rep, sorting, and the incremental collector freeing it all in steps.
-- Every Lua object is a malloc block (through lua_Alloc, realloc-based). Output depends only on
-- SCALE: tables are walked by index, never with pairs() (whose order follows string hashes seeded
-- per process), and no addresses or times are printed.
local scale = math.max(1, math.tointeger(tonumber(arg[1] or "1")) or 1)

local function mix(h, v) return (h * 31 + v) % 4294967296 end

-- 1. Entities: tables with fields, arrays and a closure, replaced at random slots.
local slots, acc = {}, 0
for i = 1, 150000 * scale do
  local k = (i * 7919) % 30000 + 1
  local name = "ent" .. i .. ":" .. (i * 7 % 1000)
  local tag = i
  slots[k] = { id = i, name = name, pos = { x = i % 640, y = i % 480 }, get = function() return tag end }
  if i % 5 == 0 then slots[(i * 13) % 30000 + 1] = nil end
  acc = mix(acc, #name)
end
local live, sum = 0, 0
for k = 1, 30000 do
  local e = slots[k]
  if e then
    live = live + 1
    sum = mix(sum, e.get() + e.pos.x + #e.name)
  end
end
print("entities", live, acc, sum)

-- 2. Strings: formatted lines, a growing buffer, split back into words.
local lines = {}
for i = 1, 50000 * scale do
  lines[#lines + 1] = string.format("%06d|%s|%.3f", i, string.rep("ab", i % 9), i / 7)
end
local text = table.concat(lines, "\n")
local words, wsum = 0, 0
for w in text:gmatch("[^|\n]+") do
  words = words + 1
  wsum = mix(wsum, #w)
end
print("text", #text, words, wsum)

-- 3. Buffers of growing sizes (realloc-heavy), built and dropped.
local buf_sum = 0
for r = 1, 12 * scale do
  local parts = {}
  for i = 1, 4000 do parts[i] = string.rep(string.char(97 + (i + r) % 26), i % 300) end
  local big = table.concat(parts)
  buf_sum = mix(buf_sum, #big + big:byte(#big // 2 + 1))
end
print("buffers", buf_sum)

-- 4. Sorting records by two keys.
local sorted_sum = 0
for r = 1, 5 * scale do
  local recs = {}
  for i = 1, 20000 do recs[i] = { a = (i * 2654435761 + r) % 1000003, b = "k" .. (i % 97) } end
  table.sort(recs, function(p, q) if p.b ~= q.b then return p.b < q.b end return p.a < q.a end)
  sorted_sum = mix(sorted_sum, recs[1].a + recs[#recs].a + #recs[#recs // 2].b)
end
print("sorted", sorted_sum)

collectgarbage("collect")
print("done", live)
