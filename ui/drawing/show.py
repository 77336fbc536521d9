"""Streamlit helpers for drawing: composed images get a PNG download under them.

(Plotly figures already carry a camera button in their toolbar that saves a PNG.)
"""

from __future__ import annotations

import io
import re

import streamlit as st
from PIL import Image

from ui import keys


def image(img: Image.Image, caption: str, name: str, width: int | str = "content",
          alt: str | None = None) -> None:
    """st.image plus a small 'PNG' download button; `name` is the file name and widget key.
    `alt` is the picture's text alternative for a screen reader (its `alt` attribute): what the
    picture shows, worded from the same facts as the step's sentence; without one, the caption
    (true of the picture, as every caption is), so no picture is left without a text.
    A picture with text drawn into it (figures.with_text_px) sits in a container that says the
    text's size (tests/slides.small_text reads the size it is drawn at)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if img.info.get("text_px"):
        with st.container(key=keys.picture_text(int(img.info["text_px"]), slug)):
            st.image(img, caption=caption, width=width, alt=alt or caption)
    else:
        st.image(img, caption=caption, width=width, alt=alt or caption)

    def png() -> bytes:
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return buf.getvalue()

    st.download_button("PNG", png, file_name=f"{slug}.png", mime="image/png",
                       key=keys.png(slug), type="tertiary", icon=":material/download:")
