"""The HTML run report: figures and the page that embeds them."""
