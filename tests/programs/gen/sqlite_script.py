#!/usr/bin/env python3
"""Writes a deterministic SQL script for sqlite3 to stdout (tests/programs, bench/programs.sh).

    python3 sqlite_script.py [SCALE]      (default 1: about 12,000 inserts)

Tables of customers, products and orders with text of random lengths, indexes, a join, group by,
window functions, an update and a delete, so the program's allocator sees strings and b-tree pages
of many sizes come and go. Every SELECT has an ORDER BY, so the output does not depend on the
query plan.
"""
import random
import sys


def main() -> int:
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(8)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 12)))
             for _ in range(400)]
    out = sys.stdout
    out.write("PRAGMA journal_mode = MEMORY;\n")
    out.write("CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, note TEXT);\n")
    out.write("CREATE TABLE product(id INTEGER PRIMARY KEY, title TEXT NOT NULL, price REAL, tags TEXT);\n")
    out.write("CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customer(id),\n"
              "                    product INTEGER REFERENCES product(id), qty INTEGER, day TEXT);\n")
    customers, products, orders = 1500 * scale, 600 * scale, 10000 * scale
    out.write("BEGIN;\n")
    for i in range(customers):
        name = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 3)))
        city = rnd.choice(words[:40])
        note = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 40)))
        out.write(f"INSERT INTO customer VALUES ({i + 1}, '{name}', '{city}', '{note}');\n")
    for i in range(products):
        title = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 6)))
        tags = ",".join(rnd.sample(words[:60], rnd.randint(0, 8)))
        out.write(f"INSERT INTO product VALUES ({i + 1}, '{title}', {rnd.randint(1, 99999) / 100}, '{tags}');\n")
    for i in range(orders):
        out.write(f"INSERT INTO orders(customer, product, qty, day) VALUES ({rnd.randint(1, customers)}, "
                  f"{rnd.randint(1, products)}, {rnd.randint(1, 20)}, "
                  f"'2024-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}');\n")
    out.write("COMMIT;\n")
    out.write("CREATE INDEX orders_customer ON orders(customer);\n")
    out.write("CREATE INDEX orders_product_day ON orders(product, day);\n")
    out.write("CREATE INDEX customer_city ON customer(city, name);\n")
    out.write("SELECT count(*), sum(qty) FROM orders;\n")
    out.write("SELECT c.city, count(*) AS n, round(sum(o.qty * p.price), 2) AS revenue\n"
              "  FROM orders o JOIN customer c ON c.id = o.customer JOIN product p ON p.id = o.product\n"
              "  GROUP BY c.city ORDER BY revenue DESC, c.city LIMIT 25;\n")
    out.write("SELECT substr(day, 1, 7) AS month, count(DISTINCT customer), max(qty)\n"
              "  FROM orders GROUP BY month ORDER BY month;\n")
    out.write("SELECT p.title, group_concat(DISTINCT c.city) FROM product p\n"
              "  JOIN orders o ON o.product = p.id JOIN customer c ON c.id = o.customer\n"
              "  WHERE p.id % 97 = 0 GROUP BY p.id ORDER BY p.id;\n")
    out.write("SELECT id, name, rank() OVER (PARTITION BY city ORDER BY length(note) DESC, id) AS r\n"
              "  FROM customer WHERE id % 53 = 0 ORDER BY city, r, id;\n")
    out.write("UPDATE product SET price = round(price * 1.1, 2), tags = tags || ',sale' WHERE id % 3 = 0;\n")
    out.write("DELETE FROM orders WHERE qty > 17;\n")
    out.write("SELECT count(*), round(avg(price), 4) FROM product WHERE tags LIKE '%sale%';\n")
    out.write("SELECT customer, count(*) FROM orders GROUP BY customer HAVING count(*) > 12 ORDER BY 2 DESC, 1;\n")
    out.write("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2000)\n"
              "  SELECT count(*), sum(length(printf('%08d-%s', x, hex(x * 7919)))) FROM n;\n")
    out.write("VACUUM;\n")
    out.write("PRAGMA integrity_check;\n")
    out.write("SELECT count(*) FROM orders;\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
