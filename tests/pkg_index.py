"""A package index for tests: wheels and sdists built on the fly, served from a temp folder.

Speaks both simple-API dialects uv reads: PEP 691 JSON (with PEP 700 upload times, which
`--exclude-newer` needs) and PEP 503 HTML. Nothing leaves the machine, and every file's upload
time is chosen by the test, so a build "as of" a date resolves the same way every time.

    index = PackageIndex(tmp_path / "index")
    index.wheel("nose", "1.3.7", uploaded=datetime(2015, 6, 1, tzinfo=UTC))
    with index.serve() as url:   # http://127.0.0.1:PORT/simple
        ...  # UV_DEFAULT_INDEX=url
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name


@dataclass
class IndexFile:
    project: str
    filename: str
    uploaded: datetime
    requires_python: str | None = None
    yanked: bool = False


@dataclass
class PackageIndex:
    root: Path
    files: list[IndexFile] = field(default_factory=list)

    def __post_init__(self) -> None:
        (self.root / "files").mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ build

    def wheel(
        self,
        name: str,
        version: str,
        *,
        uploaded: datetime,
        requires: list[str] | None = None,
        requires_python: str | None = None,
        modules: dict[str, str] | None = None,
        entry_points: str = "",
        metadata_name: str | None = None,
        tag: str = "py2.py3-none-any",
    ) -> str:
        """A pure-Python wheel whose METADATA says `requires`; `modules` maps paths in the
        wheel to their text (default: an empty package named after the project). Returns
        its file name."""
        dist = canonicalize_name(name).replace("-", "_")
        filename = f"{dist}-{version}-{tag}.whl"
        info = f"{dist}-{version}.dist-info"
        meta = _metadata(metadata_name or name, version, requires or [], requires_python)
        files = dict(modules if modules is not None else {f"{dist}/__init__.py": ""})
        files[f"{info}/METADATA"] = meta
        pys, abi, plat = tag.split("-")
        tags = [f"{py}-{abi}-{plat}" for py in pys.split(".")]
        files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        files[f"{info}/WHEEL"] += "".join(f"Tag: {t}\n" for t in tags)
        if entry_points:
            files[f"{info}/entry_points.txt"] = entry_points
        record = [
            f"{path},{_hash(text.encode())},{len(text.encode())}" for path, text in files.items()
        ]
        files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for path, text in files.items():
                zf.writestr(path, text)
        self._add(name, filename, buf.getvalue(), uploaded, requires_python)
        return filename

    def sdist(
        self,
        name: str,
        version: str,
        *,
        uploaded: datetime,
        filename: str | None = None,
        requires: list[str] | None = None,
        setup_py: str | None = None,
        buildable: bool = False,
        egg_info: bool = False,
    ) -> str:
        """A setuptools source distribution; `filename` may be an old, non-normalized one
        (`Old.Name-1.0.tar.gz`). With `buildable`, it builds here without setuptools (an
        in-tree PEP 517 backend that needs nothing from the index) into a wheel of one module
        named after the project, whose metadata requires `requires`. With `egg_info`, it is
        an sdist of 2012: its PKG-INFO (metadata 1.0) lists no requirement, its
        `*.egg-info/requires.txt` does. Returns its file name."""
        filename = filename or f"{canonicalize_name(name).replace('-', '_')}-{version}.tar.gz"
        top = filename.removesuffix(".tar.gz").removesuffix(".tar.bz2")
        setup = setup_py or (
            "from setuptools import setup\n"
            f"setup(name={name!r}, version={version!r}, py_modules=[], "
            f"install_requires={requires or []!r})\n"
        )
        pkg_info = _metadata(name, version, requires or [], None)
        members = {"setup.py": setup, "PKG-INFO": pkg_info}
        if egg_info:
            dist = canonicalize_name(name).replace("-", "_")
            members["PKG-INFO"] = f"Metadata-Version: 1.0\nName: {name}\nVersion: {version}\n"
            members[f"{dist}.egg-info/requires.txt"] = "".join(r + "\n" for r in requires or [])
        if buildable:
            members["pyproject.toml"] = (
                '[build-system]\nrequires = []\nbuild-backend = "tinybackend"\n'
                'backend-path = ["."]\n'
            )
            members["tinybackend.py"] = TINY_BACKEND.format(
                dist=canonicalize_name(name).replace("-", "_"), meta=pkg_info
            )
        buf = io.BytesIO()
        mode = "w:bz2" if filename.endswith(".bz2") else "w:gz"
        with tarfile.open(fileobj=buf, mode=mode) as tf:  # type: ignore[call-overload]
            for path, text in members.items():
                data = text.encode()
                member = tarfile.TarInfo(f"{top}/{path}")
                member.size = len(data)
                tf.addfile(member, io.BytesIO(data))
        self._add(name, filename, buf.getvalue(), uploaded, None)
        return filename

    def raw(self, name: str, filename: str, data: bytes, *, uploaded: datetime) -> str:
        """A file of any content (an unreadable archive, say)."""
        self._add(name, filename, data, uploaded, None)
        return filename

    def _add(
        self, name: str, filename: str, data: bytes, uploaded: datetime, requires_python: str | None
    ) -> None:
        (self.root / "files" / filename).write_bytes(data)
        self.files.append(IndexFile(name, filename, uploaded, requires_python))

    # ------------------------------------------------------------------ serve

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve the index on 127.0.0.1 for the life of the block; yields its simple URL."""
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet: pytest shows failures
                pass

            def do_HEAD(self) -> None:
                self.head_only = True
                self.do_GET()

            def do_GET(self) -> None:
                parts = [p for p in self.path.split("?")[0].split("/") if p]
                if parts[:1] == ["files"] and len(parts) == 2:
                    path = index.root / "files" / parts[1]
                    if path.is_file() and "/" not in parts[1]:
                        return self._send(path.read_bytes(), "application/octet-stream")
                if parts[:1] == ["simple"] and len(parts) <= 2:
                    base = f"http://{self.headers['Host']}"
                    json_wanted = "json" in self.headers.get("Accept", "")
                    page = index._page(parts[1] if len(parts) == 2 else None, base, json_wanted)
                    if page is not None:
                        kind = "application/vnd.pypi.simple.v1+json" if json_wanted else "text/html"
                        return self._send(page.encode(), kind)
                self.send_error(404)

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not getattr(self, "head_only", False):
                    self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/simple"
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def _page(self, project: str | None, base: str, as_json: bool) -> str | None:
        if project is None:
            names = sorted({canonicalize_name(f.project) for f in self.files})
            if as_json:
                return json.dumps(
                    {"meta": {"api-version": "1.1"}, "projects": [{"name": n} for n in names]}
                )
            return "".join(f'<a href="{n}/">{n}</a>\n' for n in names)
        mine = [f for f in self.files if canonicalize_name(f.project) == canonicalize_name(project)]
        if not mine:
            return None
        rows = []
        for f in mine:
            data = (self.root / "files" / f.filename).read_bytes()
            rows.append(
                {
                    "filename": f.filename,
                    "url": f"{base}/files/{f.filename}",
                    "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                    "requires-python": f.requires_python,
                    "upload-time": f.uploaded.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    "size": len(data),
                    "yanked": f.yanked,
                }
            )
        if as_json:
            return json.dumps(
                {"meta": {"api-version": "1.1"}, "name": canonicalize_name(project), "files": rows}
            )
        return "".join(
            f'<a href="{r["url"]}#sha256={r["hashes"]["sha256"]}">{r["filename"]}</a>\n'
            for r in rows
        )


# A PEP 517 backend that builds, with the standard library only, a wheel holding one module.
TINY_BACKEND = """
import base64, hashlib, os, zipfile

META = {meta!r}
VERSION = [l.split(": ", 1)[1] for l in META.splitlines() if l.startswith("Version: ")][0]


def _record(items):
    rows = []
    for path, data in items:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{{path}},sha256={{digest}},{{len(data)}}")
    return "\\n".join(rows) + "\\n"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = "{dist}-" + VERSION + ".dist-info"
    items = [
        ("{dist}.py", b"BUILT = True\\n"),
        (info + "/METADATA", META.encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"),
    ]
    items.append((info + "/RECORD", (_record(items) + info + "/RECORD,,\\n").encode()))
    name = "{dist}-" + VERSION + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, data in items:
            zf.writestr(path, data)
    return name
"""


def _metadata(name: str, version: str, requires: list[str], requires_python: str | None) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n"


def _hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


@contextlib.contextmanager
def used_by_uv(index: PackageIndex, cache: Path) -> Iterator[str]:
    """Serve `index` and point every uv command (and the harness's index lookups) at it, with
    a uv cache of the test's own: the test then needs no network and sees nothing else."""
    import os

    saved = {k: os.environ.get(k) for k in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_CACHE_DIR")}
    with index.serve() as url:
        os.environ.update({"UV_DEFAULT_INDEX": url, "UV_CACHE_DIR": str(cache)})
        os.environ.pop("UV_INDEX_URL", None)
        try:
            yield url
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
