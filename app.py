"""ViT Explainer: routes to one page per stage and draws the shared sidebar. No math here."""

import streamlit as st

from ui import sidebar

st.set_page_config(page_title="ViT Explainer", page_icon="🔍", layout="wide")

pages = [
    st.Page("pages/overview.py", title="The whole pass", icon="🗺️", default=True),
]
pg = st.navigation(pages)
sidebar.draw()  # after st.navigation and before pg.run(): uploads reach the session reliably
pg.run()
