"""On the host, once per service environment and set of hosts: the stand-ins' TLS files.

    python -I tlsgen.py OUT_DIR HOST...

Run with the service environment's interpreter, which has `cryptography` (catalog.toml pins it
for every service with tls_ports); never imported by swebounty. Writes into OUT_DIR (which
must exist and be empty):

    ca.pem    a CA certificate, the one the tests are told to trust
    cert.pem  a server certificate for every HOST, signed by that CA, then the CA's
    key.pem   the server certificate's private key (relay.py serves with it)

The CA's private key is made in memory, signs the one server certificate and is never written:
no one, the tests included, can ever sign another certificate this CA vouches for. The tests
trust it only inside their sandbox, where the stand-in hosts are all it could vouch for.
"""

from __future__ import annotations

import datetime
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 3650


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def make(out_dir: str, hosts: list[str]) -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("swebounty test services CA (throw-away: its key was never kept)")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    usage = dict.fromkeys(
        ["content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
         "encipher_only", "decipher_only"], False,
    )  # fmt: skip
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, **usage),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False, **usage),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    files = {
        "ca.pem": ca.public_bytes(pem),
        "cert.pem": cert.public_bytes(pem) + ca.public_bytes(pem),
        "key.pem": key_pem,
    }
    for name, data in files.items():
        # Readable by the sandbox's uid (root's runs use another): nothing here is a secret
        # worth more than what the tests can already do in their own sandbox (relay.py).
        fd = os.open(os.path.join(out_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    make(sys.argv[1], sys.argv[2:])
