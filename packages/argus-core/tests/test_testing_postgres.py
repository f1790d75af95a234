"""The test PostgreSQL a test may stop and start (an outage), as the store fault tests use it."""

import psycopg
import pytest

from argus_ir.testing.postgres import private_postgres_server


def test_a_private_server_stops_and_starts_again():
    with private_postgres_server() as pg:
        url = pg.server.url
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE TABLE t (x int)")
            c.execute("INSERT INTO t VALUES (1)")
        pg.stop()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=2)
        pg.start()
        with psycopg.connect(url) as c:
            assert c.execute("SELECT x FROM t").fetchall() == [(1,)]
        pg.stop(kill=True)
        pg.start()
        with psycopg.connect(url) as c:
            assert c.execute("SELECT x FROM t").fetchall() == [(1,)]
