# A deterministic allocation-heavy Ruby workload (tests/programs, bench/programs.sh).
#
#   ruby rb_workload.rb [SCALE]      (default 1)
#
# What a Ruby service or build tool does to its heap: hashes of records built and replaced, strings
# grown and sliced, arrays that grow to tens of thousands of entries and shift, JSON-like documents
# built and walked, sorted runs, and collections between phases. Ruby's object slots live in its
# own heap pages; strings, arrays and hash tables past a few words are malloc'd, and the garbage
# collector frees them in bursts. Output depends only on SCALE: hashes iterate in insertion order,
# and no addresses, object ids, hash values or times are printed.
scale = (ARGV[0] || "1").to_i
scale = 1 if scale < 1

def mix(h, v)
  ((h * 31) + v) & 0xffffffff
end

# 1. A table of records, replaced in place: the old record's strings and arrays die at the next GC.
records = {}
acc = 0
(150_000 * scale).times do |i|
  k = (i * 7919) % 40_000
  name = "rec-#{i}-" * (1 + i % 4)
  records[k] = { name: name, tags: Array.new(1 + i % 6) { |t| "t#{(i + t) % 97}" }, n: i }
  acc = mix(acc, name.bytesize)
end
sum = 0
records.each_value { |r| sum = mix(sum, r[:n] + r[:tags].size) }
puts "records #{records.size} #{acc} #{sum}"

# 2. A queue that grows and shifts in blocks (its buffer is reallocated as it grows).
queue = []
total = 0
(400_000 * scale).times do |i|
  queue << "item#{i % 1000}"
  if queue.size > 30_000
    queue.shift(1_000).each { |s| total += s.bytesize }
  end
end
puts "queue #{queue.size} #{total}"

# 3. Strings built by appending, then cut up and joined.
text = +""
(60_000 * scale).times { |i| text << "word#{i % 5000} " }
words = text.split(" ")
joined = words.each_slice(64).map { |s| s.join(",") }
check = joined.reduce(0) { |h, s| mix(h, s.bytesize) }
puts "text #{text.bytesize} #{words.size} #{joined.size} #{check}"

# 4. Nested documents (a parsed configuration or API response), built, walked and dropped.
docs = 0
(3_000 * scale).times do |d|
  doc = { "id" => d, "items" => Array.new(40) { |i| { "k" => "key#{i}", "v" => [i, d, "x" * (i % 17)] } } }
  doc["items"].each { |it| docs = mix(docs, it["v"][2].size + it["k"].size) }
end
puts "docs #{docs}"

# 5. Sorting runs of strings and pairs.
runs = 0
(40 * scale).times do |r|
  arr = Array.new(5_000) { |i| format("%08d-%d", (i * 2654435761 + r) % 100_000_007, i % 13) }
  sorted = arr.sort
  pairs = arr.map { |s| [s[-1].to_i, s] }.sort_by { |p| p }
  runs = mix(runs, sorted[0].bytesize + sorted[-1].sum + pairs[0][0] + pairs[-1][1].sum)
end
puts "sort #{runs}"
GC.start
puts "live records #{records.size}"
