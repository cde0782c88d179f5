"""Plot helpers of mlpl_lab (matplotlib, Agg-safe; nothing calls plt.show())."""
