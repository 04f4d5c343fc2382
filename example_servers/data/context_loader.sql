-- Seed database of the context_loader example (Fjord Outfitters support agent).
-- Run in one transaction when the configured database has no `customers` table yet; every
-- statement is idempotent, so two workers seeding a new file at once do no harm.
-- A real deployment points CONTEXT_LOADER_DB_URL at its own database with these tables.

CREATE TABLE IF NOT EXISTS customers (
    id              INTEGER PRIMARY KEY,
    channel_user_id TEXT UNIQUE,             -- e.g. the Slack user id Runbear sends
    email           TEXT UNIQUE COLLATE NOCASE,
    name            TEXT NOT NULL,
    plan            TEXT NOT NULL,
    region          TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS orders (
    number       TEXT PRIMARY KEY,           -- what customers type: "4821" or "#4821"
    customer_id  INTEGER NOT NULL REFERENCES customers(id),
    status       TEXT NOT NULL,              -- processing, shipped, delivered, cancelled
    placed_on    TEXT NOT NULL,              -- ISO dates: rendered as stored
    shipped_on   TEXT,
    carrier      TEXT,
    tracking     TEXT,
    items        TEXT NOT NULL,
    total        TEXT NOT NULL               -- money as text with its currency: no float rounding
);

CREATE INDEX IF NOT EXISTS orders_by_customer ON orders(customer_id, number);

CREATE TABLE IF NOT EXISTS policy_sections (
    slug      TEXT PRIMARY KEY,
    title     TEXT NOT NULL,
    keywords  TEXT NOT NULL,                 -- comma-separated word prefixes
    body      TEXT NOT NULL,
    position  INTEGER NOT NULL
);

INSERT OR IGNORE INTO customers (id, channel_user_id, email, name, plan, region) VALUES
    (1, 'U0123456789', 'dana@example.com',  'Dana Whitfield', 'Enterprise', 'EU (Oslo)'),
    (2, 'U0222222222', 'raj@example.com',   'Raj Patel',      'Team',       'US East'),
    (3, 'U0333333333', 'mia@example.com',   'Mia Svensson',   'Free',       'EU (Stockholm)');

INSERT OR IGNORE INTO orders (number, customer_id, status, placed_on, shipped_on, carrier, tracking, items, total) VALUES
    ('4821', 1, 'shipped',    '2026-08-27', '2026-08-30', 'Posten', 'PN4821NO', '1 x Glacier 3-season tent', 'USD 640.00'),
    ('4907', 1, 'processing', '2026-09-02', NULL,         NULL,     NULL,       '2 x Merino base layer (M)', 'USD 118.00'),
    ('4650', 1, 'delivered',  '2026-07-11', '2026-07-12', 'Posten', 'PN4650NO', '1 x Trail running shoes (42)', 'USD 139.00'),
    ('5102', 2, 'shipped',    '2026-09-01', '2026-09-03', 'UPS',    '1Z5102US', '1 x Alpine down jacket (L)', 'USD 329.00'),
    ('5110', 2, 'cancelled',  '2026-09-04', NULL,         NULL,     NULL,       '1 x Trekking poles (pair)', 'USD 89.00');

INSERT OR IGNORE INTO policy_sections (slug, title, keywords, body, position) VALUES
    ('returns', 'Returns and refunds', 'return,refund,exchange,money back',
     'Unworn items are accepted within 30 days of delivery with the receipt. Refunds go to the original payment method within 5 business days; refunds over USD 500 need a human approver. Exchanges for another size are free.',
     1),
    ('shipping', 'Shipping and delivery', 'ship,deliver,tracking,carrier,parcel,package',
     'Orders ship within 2 business days. Standard delivery takes 3-5 business days in the EU and US; tracking numbers are sent when an order ships. Enterprise and Team plans ship free.',
     2),
    ('warranty', 'Warranty and repairs', 'warranty,broken,defect,repair,guarantee,damaged',
     'Tents, jackets and footwear carry a 2-year warranty against manufacturing defects. Damaged items are repaired or replaced; send a photo of the damage and the order number.',
     3),
    ('billing', 'Billing and invoices', 'invoice,billing,charge,payment,receipt,vat',
     'Invoices are issued when an order ships and include VAT for EU addresses. Enterprise customers can pay by bank transfer within 30 days; other plans pay by card at checkout.',
     4);
