"""Fixed token figures of what is not text: an image, a PDF page, by the provider's family
(anthropic, openai, google), and the family a provider id belongs to."""

from __future__ import annotations

# Tokens one image costs, by provider, for a typical large image:
#  anthropic: (width * height) / 750 for a 1092x1092 image (the largest kept unscaled) = 1590.
#  openai:    high detail 1024x1024 = 85 base + 170 per 512px tile * 4 tiles = 765.
#  google:    258 per image (Gemini, images up to 384px a side; larger ones are tiled by 258).
IMAGE_TOKENS: dict[str, int] = {"anthropic": 1590, "openai": 765, "google": 258}
# Tokens one PDF page costs: the page's text (~1500 tokens for a dense page) plus its page image
# (anthropic, openai); Gemini counts a page as one 258-token image.
PDF_PAGE_TOKENS: dict[str, int] = {"anthropic": 3090, "openai": 2265, "google": 258}
# Provider ids (litellm's spelling) that serve one of the families above.
_PROVIDER_FAMILY: dict[str, str] = {
    "anthropic": "anthropic",
    "bedrock": "anthropic",
    "openai": "openai",
    "azure": "openai",
    "azure_ai": "openai",
    "text-completion-openai": "openai",
    "google": "google",
    "gemini": "google",
    "vertex_ai": "google",
}
_UNKNOWN_FAMILY = "anthropic"  # the largest figures: an unknown provider is never under-counted


def provider_family(provider: str | None) -> str:
    """ "anthropic", "openai" or "google" for a provider id (litellm's spelling); unknown -> anthropic."""
    key = (provider or "").lower()
    return _PROVIDER_FAMILY.get(key.split("/")[0], _UNKNOWN_FAMILY)


def image_tokens(provider: str | None) -> int:
    """Tokens for one image sent to `provider` (an unknown provider gets the largest figure)."""
    return IMAGE_TOKENS[provider_family(provider)]


def pdf_page_tokens(provider: str | None) -> int:
    """Tokens for one PDF page sent to `provider` (an unknown provider gets the largest figure)."""
    return PDF_PAGE_TOKENS[provider_family(provider)]
