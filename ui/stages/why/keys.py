"""The why stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

WHY_MAPS = "why_maps"  # chart: the six maps side by side, one colour scale
WHY_SANITY = "why_sanity"  # chart: the maps on the trained model and with random weights
WHY_PATCH = "why_patch"  # chart: restored shares per block on the patch grid, and per head
WHY_WORD = "why_word"  # pills: the caption's words, the one whose maps are shown
WHY_WORD_METHOD = "why_word_method"  # selectbox: the map whose top patches are greyed
WHY_WORD_K = "why_word_k"  # slider: how many of the word's top patches are greyed
WHY_WORD_FIGURE = "why_word_figure"  # chart: the word's map, and the image with its top k greyed
WHY_GUESS_PICK = "why_guess_pick"  # multiselect: the patches of the guess (list[int]; clicks too)
WHY_GUESS_GRID = "why_guess_grid"  # chart: the clickable patch grid (a click toggles a patch)
WHY_GUESS_SENT = "why_guess_sent"  # chart: the guess sent to the class, outlined (not clickable)
WHY_GUESS_TEST = "why_guess_test"  # button: "Test my guess" (alone)
WHY_GUESS_TESTED = "_why_guess_tested"  # tuple[int, ...] | None: the guess tested (alone)
WHY_GUESS_AGAIN = "why_guess_again"  # button: "Guess again" (alone, after a test)
WHY_GUESS_SCORES = "why_guess_scores"  # chart: the guess's deletion AUC beside the methods'
WHY_RACE = "why_race"  # chart: the image greyed, the deletion and insertion curves
WHY_PLAY = "why_play"  # button: Play / Pause the greying
WHY_FRAME = "why_frame"  # slider: how many groups of patches are greyed
WHY_GUESS_SKIP = "why_guess_skip"  # button: "Skip guessing" (alone: shows the later steps)
WHY_OPEN = "_why_open"  # bool: alone, the later steps are shown (a guess tested, or skipped)
