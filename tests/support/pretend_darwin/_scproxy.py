"""macOS's proxy settings module (a C module of macOS's Python), which urllib.request imports on
darwin: no proxies, as on a Mac without any configured."""


def _get_proxy_settings():
    return {"exclude_simple": False, "exceptions": []}


def _get_proxies():
    return {}
