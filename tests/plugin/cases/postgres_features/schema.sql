CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS citext;

-- The mood of a person, with values that are not Python names.
CREATE TYPE mood AS ENUM ('happy', 'sad', 'so-so', 'a,b', '1st', 'class');
CREATE TYPE status AS ENUM ('open', 'closed');

CREATE SCHEMA inventory;
CREATE TYPE inventory.grade AS ENUM ('low', 'high');

CREATE TABLE people (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    mood mood NOT NULL,
    past_moods mood[] NOT NULL,
    maybe_moods mood[],
    maybe_mood mood,
    email citext
);

CREATE TABLE pets (
    id bigserial PRIMARY KEY,
    owner_id int8 NOT NULL REFERENCES people (id),
    name text NOT NULL
);

CREATE TABLE inventory.items (
    id bigserial PRIMARY KEY,
    sku text NOT NULL,
    grade inventory.grade NOT NULL
);

CREATE TABLE statuses (
    id int8 PRIMARY KEY,
    status status NOT NULL
);

CREATE TABLE news (
    id int8 PRIMARY KEY,
    headline text NOT NULL
);

CREATE TABLE shelf (
    id int8 PRIMARY KEY,
    label text NOT NULL
);

CREATE TABLE kinds (
    id int8 PRIMARY KEY,
    host inet NOT NULL,
    maybe_host inet,
    net cidr NOT NULL,
    span int4range NOT NULL,
    big_span int8range,
    amounts numrange,
    days daterange,
    moments tstzrange,
    spans int4multirange,
    attrs hstore NOT NULL,
    maybe_attrs hstore,
    docs jsonb[] NOT NULL,
    maybe_docs json[],
    flags bool[] NOT NULL,
    hosts inet[],
    tags citext[] NOT NULL,
    maybe_tags citext[]
);

-- Names that are keywords, builtins, or the modules of their types.
CREATE TABLE "none" (
    "class" int8 PRIMARY KEY,
    "in" text NOT NULL,
    uuid uuid NOT NULL,
    datetime timestamptz NOT NULL,
    models text NOT NULL,
    "list" int4 NOT NULL,
    decimal numeric NOT NULL
)
;

-- Types psycopg returns in their text form.
CREATE TYPE pair AS (a int4, b text);

CREATE TABLE text_forms (
    id int8 PRIMARY KEY,
    cash money NOT NULL,
    doc xml,
    words tsvector NOT NULL,
    mac macaddr NOT NULL,
    bits bit(3) NOT NULL,
    spot point NOT NULL,
    boxes box[],
    lsn pg_lsn,
    duo pair NOT NULL,
    duos pair[]
);

CREATE FUNCTION pair_of(a int4) RETURNS record AS $$ SELECT a, 'x y'::text, NULL::text $$ LANGUAGE sql;
