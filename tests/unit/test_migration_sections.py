"""One migration file per version, with small per-dialect sections.

``schema_version`` records the SHA-256 of the SQL each migration ran. The checksums below are
those of the SQL each dialect ran before its migrations were folded into shared files (taken
from the separate ``.cockroach.sql`` files, before the placeholder is filled): an existing
deployment sees the same checksums and neither re-runs nor warns about a migration. A migration
whose function bodies later moved to ``store/definitions/`` renders otherwise; the runner knows the
checksum it had (``FOLDED_CHECKSUMS``) and repairs the record.
"""

import hashlib

import pytest
from contextos.store.dialect import MIGRATIONS_DIR, get_dialect
from contextos.store.migrate import FOLDED_CHECKSUMS

RECORDED = {
    "postgres": {
        0: "5c57b44d956f435cdcc13b02e9a5aa9758e010535691a39362f81a1aa9d45d36",
        1: "6cf1705a3ca57113ffd9dbd158e0606477e2df90cf0f6f050464755e20879ff7",
        2: "f581127ad91a6fc42367267b1fae7af0b8454e90888ab4dedb2adcd2bb87a379",
        3: "95b975b7aac5026a6c3c0b5480cfc1f83da979e161f240d535d977016a4bf283",
        4: "7e84d6b77e0efcbd7f3d0fce9cbb5f76d257f35e100802756e8da64e4e2b073b",
        5: "02c577ba43ed1a6470ad450fe0abf39e24d37054a85fa321f7178a9ee56d03d7",
        6: "c61258ef00dcddd5b809695c73dec46abaeadafaa21dc3fe66392405773ba128",
        7: "d5f3c3de441720bf5d0d6c8972baca892523adba8906c6c15e19d94b44958697",
        8: "b944274836040d2dbf6c9118da51d5f1143601d827e004ea2f2c4049bae8c9a3",
        9: "67f287f4fb440b8a57c97cfa4590fa036b7fa724e8d805f72017e6475c3ecf53",
        10: "d0a9e6bfec12e2ea35d6d508c6586ea679364ab9c62e9b4d9b106a76c1432d60",
        11: "33e32b9a8817e6f05a963b461db26c95b5d8f3c4e4887bd9985660cd69f1d8ee",
        12: "91ce5f3e7d97f16066948df23a66d089369b1047bb749148b0647a9e28bc1b19",
        13: "b58bd7fcacdd0981074ba4fe89cad52bdb8deb507fa0f38491dfa03c08c489d2",
        14: "41d53333bc7d1ca79a5d53a2f88dd606bbafccccdc71c146d11d620a9e1b6888",
        15: "401556a856e963e5bcf4397e7548374bb46f9493dc0453aa3126ec1ff89313be",
        16: "6d67a651a0951ca8621447dc18f6fb58126b46078f10f781a915f5f8032e942b",
        18: "efa1018915cb22d775263c10e85d7582ad309ab269b59c46ae26e61afc46fe17",
        20: "9c31fb70f84b80fb821be012ee0cb42a14140a804d65db7b44733df082b711ae",
        21: "1bde9c700e6e961db05921e76df905707d06357a8fe068405f4627a617742c23",
        22: "4ab84f58e0f079e8b452275c864d75d3b9191f0d12e0d694a2a2380a2cdaf927",
        23: "0880d765ba2e594fd483c971c7562640a0d6dd310fbc1946dcd593e92e91d0fe",
        24: "400cf1ac3caa6782dd6c596ebd6576aa806709af2026eb36c882cd920fb30f6b",
        25: "c26cdee27542d01905d46fbfc911041294c422d7c64c0c3eeb559e6369da4400",
    },
    "cockroach": {
        0: "b1ad69e59a91b220dcb0fa27f5baaa6b966aa9e214fe6c0b80b8b9ce9f226af0",
        1: "6cf1705a3ca57113ffd9dbd158e0606477e2df90cf0f6f050464755e20879ff7",
        2: "7c4f8924a163c728959f7befd3e73f82ebb15b91c0defec346eddf63ccc7ceb2",
        3: "7161b3a1126c4f95cb66974fa56202d000cef12e0fb2c77a103f29ebe7aa29dc",
        4: "2253722caf6589780fcc721e032ad728e0ddf542edbefa26e91f5e08e5770b41",
        5: "ba3b97779a44a79dfde143b092160907433edb85a193e5603d027f475586e6dc",
        6: "7277cd2fbba334c8a945aee53d59ba02dc0cd16f25410a791638222bdd7d4214",
        7: "d5f3c3de441720bf5d0d6c8972baca892523adba8906c6c15e19d94b44958697",
        8: "7c804582d7ff4fa53f9db4f1b8bd49346425d01a2f96c915bbce136884930220",
        9: "67f287f4fb440b8a57c97cfa4590fa036b7fa724e8d805f72017e6475c3ecf53",
        10: "d0a9e6bfec12e2ea35d6d508c6586ea679364ab9c62e9b4d9b106a76c1432d60",
        11: "4df82369db5c83c9c6241e933224da8195d9978124b8cd1f2f2913de13ba3966",
        12: "91ce5f3e7d97f16066948df23a66d089369b1047bb749148b0647a9e28bc1b19",
        13: "a68ab61ce6de78082b1d517290a8682735b012231a20ba2bff5f79d51ed3587c",
        14: "9a98aeb67496609b163fb7667715ae2b0bf838f31367488d429e5f51896cab2c",
        15: "fb61a3746122bfb4d086d46b7f93662db19fc8340a069358d76fd196741208b5",
        16: "6784ad79120dcd76980259819672cf9efec3e7a60fae7d367c1e2badfcc4d516",
        18: "1d4637a5ccc5335378d7963797721355b93899b19fea7efed0e1045b70731549",
        20: "a24f0354eeebe49916892709359808186cc8b16f11c14f83ae56ffa2aba87687",
        21: "856be336876620f686d0106671567decdc89e65925fb3f49543abd17baef94ce",
        22: "4ab84f58e0f079e8b452275c864d75d3b9191f0d12e0d694a2a2380a2cdaf927",
        23: "bc714de4abb0b11f27dd42ee6a6a12854ca749fdd3bcfd26836bf2a2599175a7",
        24: "dacc2ed03b702b80e43b33aecbb44b2e39450ee0353003cb3f957d090e714159",
        25: "368563c6e8273824018b197b2f870a4b8c6ca2034d7a6daf85e4bdd1cf068086",
    },
}


@pytest.mark.parametrize("dialect", ["postgres", "cockroach"])
def test_each_dialect_renders_exactly_the_sql_it_ran_before_the_fold(dialect):
    d = get_dialect(dialect)
    rendered = {
        v: hashlib.sha256(d.migration_sql(p.read_text()).encode()).hexdigest() for v, _, p in d.migration_files()
    }
    folded = FOLDED_CHECKSUMS.get(dialect, {})
    for version, recorded in RECORDED[dialect].items():
        assert recorded in folded[version] if version in folded else rendered[version] == recorded, version
    assert all(rendered[v] not in folded[v] for v in folded)  # a folded migration's file did change


def test_there_is_one_file_per_migration_and_no_forked_variant():
    assert not list(MIGRATIONS_DIR.glob("*.cockroach.sql"))
    assert not list(MIGRATIONS_DIR.glob("*.postgres.sql"))


def test_a_section_reaches_only_its_dialect_and_the_markers_are_dropped():
    text = "A;\n-- dialect: postgres\nP;\n-- dialect: cockroach\nC;\n-- dialect: end\nB;\n"
    assert get_dialect("postgres").migration_sql(text) == "A;\nP;\nB;\n"
    assert get_dialect("cockroach").migration_sql(text) == "A;\nC;\nB;\n"


def test_an_unclosed_section_is_refused():
    with pytest.raises(ValueError, match="not closed"):
        get_dialect("postgres").migration_sql("A;\n-- dialect: cockroach\nC;\n")


def test_every_rendered_migration_is_free_of_markers():
    for dialect in ("postgres", "cockroach"):
        for _, _, sql in get_dialect(dialect).render_migrations(384):
            assert "-- dialect:" not in sql
