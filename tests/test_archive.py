"""medrag.ingest.archive on the real CMS zips, the mirror's nested MCD export, and hostile archives made on the fly."""

from __future__ import annotations

import hashlib
import stat
import struct
import zipfile
from pathlib import Path

import pytest
from cms_mirror import MCD_ALL_DATA_ZIP, CmsMirror

from medrag.ingest.archive import ArchiveError, extract_nested, open_zip_safely, read_member, safe_extract
from medrag.ingest.fetch import fetch

HCPCS_ZIP_NAME = "2019-Alpha-Numeric-HCPCS-File.zip"
BOMB_BYTES = 200 * 1024 * 1024


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def hcpcs_zip(cms_dir: Path) -> Path:
    return cms_dir / "hcpcs" / HCPCS_ZIP_NAME


@pytest.fixture(scope="module")
def zero_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 MB of zeros deflated to about 200 KB (ratio ~1000:1), written in streamed 1 MB pieces."""
    path = tmp_path_factory.mktemp("bomb") / "zeros.zip"
    zero = bytes(1024 * 1024)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("zeros.bin", "w") as member:
            for _ in range(BOMB_BYTES // len(zero)):
                member.write(zero)
    return path


def _zip_with(path: Path, *members: zipfile.ZipInfo | str, data: bytes = b"payload") -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member in members:
            archive.writestr(member, data)
    return path


def test_safe_extract_of_the_real_hcpcs_zip(hcpcs_zip: Path, cms_dir: Path, tmp_path: Path):
    extracted = safe_extract(hcpcs_zip, tmp_path)

    assert sorted(p.name for p in extracted) == [
        "Changes_by_ActionCode.prn", "Changes_by_HCPCSCode.prn", "HCPC2019_CONTR_ANWEB.txt",
        "HCPC2019_CONTR_ANWEB.xlsx", "HCPC2019_README.txt", "HCPC2019_Trans_Alpha.xlsx", "proc_notes_2019.txt",
    ]
    assert _tree(tmp_path) == sorted(extracted)
    records = tmp_path / "HCPC2019_CONTR_ANWEB.txt"
    assert records.stat().st_size == 3_742_917
    assert _sha256(records) == _sha256(cms_dir / "hcpcs" / "HCPC2019_CONTR_ANWEB.txt")


def test_read_member_matches_the_extracted_file(hcpcs_zip: Path, cms_dir: Path):
    readme = read_member(hcpcs_zip, "HCPC2019_README.txt", max_bytes=10_000)
    assert readme == (cms_dir / "hcpcs" / "HCPC2019_README.txt").read_bytes()

    with open_zip_safely(hcpcs_zip) as archive:
        assert read_member(archive, "HCPC2019_README.txt", max_bytes=10_000) == readme


def test_read_member_cap(hcpcs_zip: Path):
    with pytest.raises(ArchiveError, match="'HCPC2019_CONTR_ANWEB.txt' declares 3742917 bytes, over the cap"):
        read_member(hcpcs_zip, "HCPC2019_CONTR_ANWEB.txt", max_bytes=1_000_000)


def test_missing_member_lists_what_is_there(hcpcs_zip: Path):
    with pytest.raises(ArchiveError) as caught:
        read_member(hcpcs_zip, "HCPC2019_ANWEB.txt", max_bytes=10_000_000)

    message = str(caught.value)
    assert message.startswith(f"{hcpcs_zip}: no member 'HCPC2019_ANWEB.txt'; members are: ")
    for name in ("HCPC2019_CONTR_ANWEB.txt", "HCPC2019_README.txt", "proc_notes_2019.txt"):
        assert name in message


def test_nested_extraction_of_the_mirror_all_data_zip(cms_mirror: CmsMirror, cms_dir: Path, tmp_path: Path):
    downloaded = fetch(cms_mirror.url(MCD_ALL_DATA_ZIP), tmp_path / "download",
                       max_bytes=50_000_000, timeout=10, retries=1, backoff=0.01)

    files = extract_nested(downloaded.path, tmp_path / "all_data")

    root = tmp_path / "all_data"
    assert files == _tree(root)
    assert not [p for p in files if p.suffix == ".zip"]
    mcd = cms_dir / "mcd"
    ncd_csvs = [root / "ncd" / "ncd_csv" / p.name for p in (mcd / "ncd" / "ncd_csv").iterdir()]
    lcd_source = mcd / "current_lcd" / "current_lcd_csv"
    lcd_csvs = [root / "current_lcd" / "current_lcd_csv" / p.name for p in lcd_source.iterdir()]
    expected = sorted(
        ncd_csvs + lcd_csvs
        + [root / "ncd" / "ncd data dictionary.pdf", root / "ncd" / "readme_first.txt"]
        + [root / "current_lcd" / "lcd data dictionary.pdf", root / "current_lcd" / "readme_first.txt"]
    )
    assert files == expected
    assert (len(ncd_csvs), len(lcd_csvs), len(files)) == (5, 29, 38)
    ncd_trkg = root / "ncd" / "ncd_csv" / "ncd_trkg.csv"
    assert _sha256(ncd_trkg) == _sha256(mcd / "ncd" / "ncd_csv" / "ncd_trkg.csv")
    hcpc_links = root / "current_lcd" / "current_lcd_csv" / "lcd_x_hcpc_code.csv"
    assert hcpc_links.read_bytes() == (mcd / "current_lcd" / "current_lcd_csv" / "lcd_x_hcpc_code.csv").read_bytes()


def test_nesting_deeper_than_the_limit_is_refused(cms_mirror: CmsMirror, tmp_path: Path):
    all_data = cms_mirror.source_file(MCD_ALL_DATA_ZIP)

    with pytest.raises(ArchiveError, match=r"all_data\.zip -> (ncd|current_lcd)\.zip -> \w+_csv\.zip: .*depth"):
        extract_nested(all_data, tmp_path, depth=2)


def test_nested_limits_apply_to_the_whole_tree(cms_mirror: CmsMirror, tmp_path: Path):
    all_data = cms_mirror.source_file(MCD_ALL_DATA_ZIP)

    # ncd_trkg.csv alone is 1.9 MB: the outer and middle levels fit in 2.5 MB, the CSV level does not.
    with pytest.raises(ArchiveError, match=r"-> ncd_csv\.zip: declared uncompressed size \d+ bytes exceeds"):
        extract_nested(all_data, tmp_path, max_total_bytes=2_500_000)


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        ("../evil.txt", "contains '..'"),
        ("data/../../evil.txt", "contains '..'"),
        ("..\\evil.txt", "contains '..'"),
        ("/abs/evil.txt", "is an absolute path"),
        ("C:/Windows/evil.txt", "names a drive letter"),
    ],
)
def test_zip_slip_members_are_refused(member: str, problem: str, tmp_path: Path):
    archive = _zip_with(tmp_path / "slip.zip", "readme_first.txt", member)
    dest = tmp_path / "out"

    with pytest.raises(ArchiveError, match=f"slip.zip: member {member!r} {problem}".replace("\\", "\\\\")):
        safe_extract(archive, dest)

    assert _tree(tmp_path) == [archive]


def test_symlink_members_are_refused(tmp_path: Path):
    link = zipfile.ZipInfo("ncd_csv/ncd_trkg.csv")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive = _zip_with(tmp_path / "link.zip", link, data=b"/etc/passwd")

    with pytest.raises(ArchiveError, match="'ncd_csv/ncd_trkg.csv' is a symbolic link"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "ncd_csv").exists()


def test_too_many_members_are_refused(tmp_path: Path):
    archive = _zip_with(tmp_path / "many.zip", *[f"part_{n}.csv" for n in range(30)])

    with pytest.raises(ArchiveError, match="many.zip: 30 members exceed the limit of 10"):
        safe_extract(archive, tmp_path / "out", max_members=10)
    assert len(safe_extract(archive, tmp_path / "out", max_members=30)) == 30


def test_zero_bomb_is_refused_by_ratio(zero_bomb: Path, tmp_path: Path):
    with pytest.raises(ArchiveError, match=r"'zeros.bin' has compression ratio 10\d\d:1, over the cap of 100:1"):
        safe_extract(zero_bomb, tmp_path / "out")
    assert _tree(tmp_path) == []


def test_zero_bomb_is_refused_by_declared_total(zero_bomb: Path, tmp_path: Path):
    with pytest.raises(ArchiveError, match=f"declared uncompressed size {BOMB_BYTES} bytes exceeds the cap"):
        safe_extract(zero_bomb, tmp_path / "out", max_total_bytes=100_000_000, max_ratio=10_000)
    assert _tree(tmp_path) == []


def test_bomb_with_lying_size_headers_is_refused_while_streaming(zero_bomb: Path, tmp_path: Path):
    liar = tmp_path / "liar.zip"
    data = bytearray(zero_bomb.read_bytes())
    with zipfile.ZipFile(zero_bomb) as archive:
        info = archive.infolist()[0]
        central_directory = archive.start_dir
    # Uncompressed size field: offset 22 in the local header, 24 in the central directory entry.
    for offset in (info.header_offset + 22, central_directory + 24):
        assert struct.unpack_from("<I", data, offset)[0] == BOMB_BYTES
        struct.pack_into("<I", data, offset, 4096)
    liar.write_bytes(bytes(data))
    with zipfile.ZipFile(liar) as archive:
        assert archive.infolist()[0].file_size == 4096

    with pytest.raises(ArchiveError, match="liar.zip: member 'zeros.bin' is corrupt or truncated: Bad CRC-32"):
        safe_extract(liar, tmp_path / "out", max_ratio=10_000)
    assert _tree(tmp_path / "out") == []


def test_corrupt_member_data_names_archive_and_member(hcpcs_zip: Path, tmp_path: Path):
    corrupt = tmp_path / "corrupt.zip"
    data = bytearray(hcpcs_zip.read_bytes())
    with zipfile.ZipFile(hcpcs_zip) as archive:
        info = archive.getinfo("HCPC2019_CONTR_ANWEB.txt")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for offset in range(start + 100_000, start + 100_064):
        data[offset] ^= 0xFF
    corrupt.write_bytes(bytes(data))

    with pytest.raises(ArchiveError, match="corrupt.zip: member 'HCPC2019_CONTR_ANWEB.txt' is corrupt"):
        read_member(corrupt, "HCPC2019_CONTR_ANWEB.txt", max_bytes=10_000_000)
    with pytest.raises(ArchiveError, match="'HCPC2019_CONTR_ANWEB.txt' is corrupt or truncated"):
        safe_extract(corrupt, tmp_path / "out")
    assert not (tmp_path / "out" / "HCPC2019_CONTR_ANWEB.txt").exists()
    assert _tree(tmp_path / "out") == []


def test_truncated_zip_is_refused(hcpcs_zip: Path, tmp_path: Path):
    half = tmp_path / "half.zip"
    data = hcpcs_zip.read_bytes()
    half.write_bytes(data[: len(data) // 2])

    with pytest.raises(ArchiveError, match=f"{half}: corrupt or truncated zip archive"):
        open_zip_safely(half)
    with pytest.raises(ArchiveError, match="half.zip: corrupt or truncated"):
        safe_extract(half, tmp_path / "out")
    with pytest.raises(ArchiveError, match="zip archive not found"):
        open_zip_safely(tmp_path / "nothing.zip")
