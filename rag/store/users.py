"""The built-in user list: for a server without an identity provider (``RAG_AUTH=users``).

Passwords are hashed with argon2id (argon2-cffi, its default parameters, which follow RFC 9106's
second recommendation); only the hash is stored, and a hash made with weaker parameters is
upgraded at the next sign-in. A wrong name and a wrong password fail alike, in about the same time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from rag.errors import RagError, SignInFailed
from rag.store.access import Principal
from rag.store.catalog import Catalog, now

MIN_PASSWORD = 8  # NIST SP 800-63B's minimum for a password the user chose
_hasher = PasswordHasher()


@cache
def _dummy_hash() -> str:
    """Verified against when the name is unknown, so that costs one verify too."""
    return _hasher.hash("not a password anyone has")


@dataclass(frozen=True)
class User:
    id: str
    name: str
    created_at: str


def add_user(catalog: Catalog, user_id: str, password: str, name: str = "") -> None:
    """Add ``user_id`` (or set a new password for them)."""
    user_id = user_id.strip()
    if not user_id or any(c.isspace() for c in user_id):
        raise RagError(f"'{user_id}' is not a user name.", fix="Use a name without spaces, e.g. alice or a@b.org.")
    if len(password) < MIN_PASSWORD:
        raise RagError(f"The password is shorter than {MIN_PASSWORD} characters.", fix="Choose a longer one.")
    with catalog.tx() as db:
        db.execute(
            "INSERT INTO users VALUES (?,?,?,?) ON CONFLICT(id) DO UPDATE SET password_hash=excluded.password_hash,"
            " name=excluded.name",
            (user_id, name or user_id, _hasher.hash(password), now()),
        )


def remove_user(catalog: Catalog, user_id: str) -> None:
    with catalog.tx() as db:
        if not db.execute("DELETE FROM users WHERE id=?", (user_id,)).rowcount:
            raise RagError(f"There is no user '{user_id}'.", fix="`python -m rag users list` shows them.")


def list_users(catalog: Catalog) -> list[User]:
    return [User(r[0], r[1], r[2]) for r in catalog.q("SELECT id, name, created_at FROM users ORDER BY id")]


def sign_in(catalog: Catalog, user_id: str, password: str) -> Principal:
    """The principal for ``user_id`` when ``password`` is theirs; SignInFailed otherwise."""
    rows = catalog.q("SELECT name, password_hash FROM users WHERE id=?", user_id.strip())
    stored = rows[0]["password_hash"] if rows else _dummy_hash()
    try:
        _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        raise SignInFailed("Wrong user name or password.") from None
    if not rows:
        raise SignInFailed("Wrong user name or password.")
    if _hasher.check_needs_rehash(stored):
        with catalog.tx() as db:
            db.execute("UPDATE users SET password_hash=? WHERE id=?", (_hasher.hash(password), user_id.strip()))
    return Principal(user_id.strip(), rows[0]["name"])
